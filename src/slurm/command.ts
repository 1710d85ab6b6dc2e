/**
 * Running one Slurm command (sbatch, squeue, scontrol, scancel, sinfo): execFile, never a
 * shell, so no argument is ever reparsed; a deadline, since a controller that does not
 * answer makes Slurm's commands retry for a long time; stdout and stderr kept for the
 * caller, which knows which failures are answers (squeue's "Invalid job id specified").
 */
import { execFile } from 'node:child_process';
import { EnvironmentError, ProbeError, systemErrorCode } from '../errors.ts';

/** How long one Slurm command may take: a busy controller answers in seconds, a dead one never. */
export const SLURM_COMMAND_TIMEOUT_MS = 60_000;

/** The most output one command may print (squeue over a handful of jobs prints a few lines). */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** What a command printed and how it ended (`code` 0 is success). */
export interface SlurmOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/** A Slurm command that failed or answered in a form probe does not read; the message names the command. */
export class SlurmCommandError extends ProbeError {
  constructor(command: string, problem: string, options?: { cause?: unknown }) {
    super(`${command}: ${problem}`, options);
  }
}

/**
 * Runs `command args` and resolves with how it ended, whatever its exit code. Throws an
 * EnvironmentError where the program is not installed, and a SlurmCommandError where it
 * ran past the deadline or could not run.
 */
export function runSlurm(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<SlurmOutput> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs ?? SLURM_COMMAND_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: MAX_OUTPUT_BYTES,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) return resolve({ code: 0, stdout, stderr });
        if (systemErrorCode(error) === 'ENOENT')
          return reject(new EnvironmentError(`${command} is not on PATH: is Slurm installed here?`, { cause: error }));
        // execFile's error for a command that ran and exited non-zero carries a numeric code;
        // a killed one (the deadline, the output cap) carries the signal instead.
        if (typeof error.code === 'number') return resolve({ code: error.code, stdout, stderr });
        const why = error.killed
          ? `did not answer within ${Math.round((options.timeoutMs ?? SLURM_COMMAND_TIMEOUT_MS) / 1000)} s (is slurmctld up?)`
          : `could not run: ${error.message}`;
        reject(new SlurmCommandError(command, why, { cause: error }));
      },
    );
  });
}

/**
 * Slurm's own error lines as one line for a message: "sbatch: error: " prefixes and "Try
 * --help" hints dropped, control characters shown as "?", at most 500 characters.
 */
export function slurmErrorLine(command: string, stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.replace(/[\x00-\x1f\x7f]/g, '?').trim())
    .filter((line) => line && !/^Try ".*--help"/.test(line))
    .map((line) => line.replace(new RegExp(`^${command}: (error: )?`), '').replace(/^error: /, ''));
  const joined = lines.join('; ') || 'no message';
  return joined.length > 500 ? `${joined.slice(0, 500)}…` : joined;
}
