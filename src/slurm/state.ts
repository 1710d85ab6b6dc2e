/**
 * A Slurm job's state as the controller reports it, and the readers of the two answers
 * probe asks for it: squeue's lines (the jobs still pending or running) and `scontrol show
 * job -o` (a job that ended, with its exit code, for MinJobAge after it ended). Never
 * sacct: many clusters, and the test cluster, keep no accounting database.
 *
 * Both readers take what the command printed and either return what it says or throw one
 * SlurmCommandError naming the command and the line it could not read; a line about a job
 * nobody asked for is no error (squeue lists what it likes).
 */
import { SlurmCommandError } from './command.ts';

/** The job states Slurm documents (squeue(1), JOB STATE CODES); another string is kept as given. */
export type SlurmJobState =
  | 'PENDING'
  | 'CONFIGURING'
  | 'RUNNING'
  | 'COMPLETING'
  | 'SUSPENDED'
  | 'STOPPED'
  | 'SIGNALING'
  | 'STAGE_OUT'
  | 'RESIZING'
  | 'REQUEUED'
  | 'REQUEUE_FED'
  | 'REQUEUE_HOLD'
  | 'RESV_DEL_HOLD'
  | 'SPECIAL_EXIT'
  | 'COMPLETED'
  | 'FAILED'
  | 'CANCELLED'
  | 'TIMEOUT'
  | 'PREEMPTED'
  | 'NODE_FAIL'
  | 'OUT_OF_MEMORY'
  | 'BOOT_FAIL'
  | 'DEADLINE'
  | 'REVOKED'
  | (string & {});

/**
 * What probe knows of one job. `known: false`: neither squeue nor scontrol knows the id (it
 * ended more than MinJobAge ago, or the controller lost its state); the caller decides by
 * whether the job's result exists.
 */
export type JobState =
  | {
      known: true;
      state: SlurmJobState;
      /** Why the job is pending or ended as it did (Slurm's reason code), where Slurm gives one other than "None". */
      reason?: string;
      /** The job script's exit code, for a job that ended (scontrol's ExitCode=code:signal). */
      exitCode?: number;
      /** The signal that ended it, where one did (15 for a cancelled job), else 0. */
      signal?: number;
    }
  | { known: false };

/** States a job does not leave: it ran to its end, failed, or was ended. Anything else may still change. */
const FINAL_STATES: ReadonlySet<string> = new Set([
  'COMPLETED',
  'FAILED',
  'CANCELLED',
  'TIMEOUT',
  'PREEMPTED',
  'NODE_FAIL',
  'OUT_OF_MEMORY',
  'BOOT_FAIL',
  'DEADLINE',
  'REVOKED',
  'SPECIAL_EXIT',
]);

/** Whether a job in `state` has ended for good (a state probe does not know is taken as not ended). */
export function isFinalState(state: SlurmJobState): boolean {
  return FINAL_STATES.has(state);
}

/** A state word as Slurm prints them: capitals and underscores (scontrol may add `+` flags). */
const STATE_WORD = /^[A-Z][A-Z_]*$/;

/** The format probe asks squeue for (`-o`): id, state, reason, separated by `|`, which none of them contains. */
export const SQUEUE_FORMAT = '%i|%T|%r';

/** Text of a line for an error message: control characters shown as "?", at most 200 characters. */
function shown(line: string): string {
  const clean = line.replace(/[\x00-\x1f\x7f]/g, '?');
  return JSON.stringify(clean.length > 200 ? `${clean.slice(0, 200)}…` : clean);
}

function reasonOf(reason: string | undefined): string | undefined {
  return reason && reason !== 'None' && reason !== '(null)' ? reason : undefined;
}

/** squeue's answer (`-h -o SQUEUE_FORMAT`) for the jobs in `ids`: each listed one's state and reason. */
export function parseSqueue(stdout: string, ids: ReadonlySet<string>): Map<string, JobState> {
  const states = new Map<string, JobState>();
  for (const line of stdout.split('\n')) {
    if (!line.trim()) continue;
    const m = /^\s*([^|\s]+)\|([^|]*)\|(.*)$/.exec(line);
    const state = m?.[2]?.trim();
    if (!m || !state || !STATE_WORD.test(state))
      throw new SlurmCommandError('squeue', `unexpected line ${shown(line)} (wanted id|state|reason)`);
    if (!ids.has(m[1]!)) continue;
    const reason = reasonOf(m[3]!.trim());
    states.set(m[1]!, { known: true, state, ...(reason ? { reason } : {}) });
  }
  return states;
}

/**
 * `scontrol show job -o <id>`'s answer: the job's state, reason and exit code. Its line is
 * `key=value` pairs separated by spaces; values set by users (a job name, a comment) may
 * hold spaces, so each field is the first ` Key=` after the job's own `JobId=`.
 */
export function parseScontrolJob(stdout: string, id: string): JobState {
  const line = stdout.split('\n').find((l) => l.startsWith(`JobId=${id} `));
  if (line === undefined) throw new SlurmCommandError('scontrol', `no line for JobId=${id} in its answer ${shown(stdout.trim())}`);
  const field = (key: string) => new RegExp(`(?:^| )${key}=(\\S*)`).exec(line)?.[1];
  const state = field('JobState')?.replace(/\+$/, '');
  if (!state || !STATE_WORD.test(state)) throw new SlurmCommandError('scontrol', `no JobState in the line for job ${id}: ${shown(line)}`);
  const reason = reasonOf(field('Reason'));
  // A job that has not ended shows ExitCode=0:0: no exit code yet, not a success.
  const exit = isFinalState(state) ? /^(\d+):(\d+)$/.exec(field('ExitCode') ?? '') : null;
  return {
    known: true,
    state,
    ...(reason ? { reason } : {}),
    ...(exit ? { exitCode: Number(exit[1]), signal: Number(exit[2]) } : {}),
  };
}
