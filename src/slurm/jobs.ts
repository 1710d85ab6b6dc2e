/**
 * probe's Slurm client: submit a command as a batch job, read jobs' states back, cancel one.
 * Slurm queues, places, runs and ends the jobs; probe only submits and reads back, so there
 * is no scheduler here, and no sacct either (states come from squeue and scontrol, which
 * need no accounting database).
 *
 * A job's sbatch command line, in this order (for sbatch, a later option wins):
 *   sbatch --no-requeue <the user's options> --parsable --job-name --output --chdir --wrap <command>
 * - `--no-requeue` first, a default the user may override with `--requeue`: a pre-empted or
 *   failed job then ends (PREEMPTED, NODE_FAIL) instead of queueing again under the same id,
 *   and the caller decides whether to submit it again.
 * - the user's options verbatim: partition, account, time, GPUs, QOS, constraints, … win.
 * - probe's own four last, so they win: the job id is read from --parsable's answer, the
 *   job's output lands where the caller reads it, and it runs where the caller says.
 * Options that would change what submitting means (--array, --wait, --wrap, --test-only,
 * --help, --usage, --version) are refused before anything is submitted.
 */
import { resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { runSlurm, SlurmCommandError, slurmErrorLine } from './command.ts';
import { isFinalState, type JobState, parseScontrolJob, parseSqueue, SQUEUE_FORMAT } from './state.ts';

export interface SubmitRequest {
  /** The command the job runs, one word per element (quoted here for the job's shell; argv[0] is a program). */
  argv: readonly string[];
  /** The job's name in squeue; characters other than letters, digits and `._+-` become `_`. */
  name: string;
  /** The file the job's stdout and stderr go to, relative to `cwd`. Its folder must exist: Slurm creates the file, not folders. */
  outputFile: string;
  /** The job's working directory (on a cluster, a path the compute nodes see). */
  cwd: string;
  /** The user's own sbatch options, passed through verbatim (see the precedence above). */
  sbatchArgs?: readonly string[];
  /** Variables added to the job's environment: sbatch exports its own (`--export=ALL`) unless the user's options say otherwise. */
  env?: Readonly<Record<string, string>>;
}

/** sbatch refused the job: an option of the user's (a partition that does not exist, a bad --time), or the cluster (no controller). */
export class SlurmSubmitError extends InputError {
  /** sbatch's own words, as one line. */
  readonly slurmMessage: string;

  constructor(sbatchArgs: readonly string[], stderr: string) {
    const message = slurmErrorLine('sbatch', stderr);
    const options = sbatchArgs.join(' ');
    const yours = options ? ` with your options ${options.length > 300 ? `${options.slice(0, 300)}…` : options}` : '';
    super({ file: 'sbatch' }, `refused the job${yours}: ${message}`);
    this.slurmMessage = message;
  }
}

/**
 * User options refused: each changes what submitting means (a job array, a blocking submit,
 * no job at all), or where its state is read (another cluster's jobs are not in this one's squeue).
 */
const REFUSED_OPTION = /^(?:--(?:array|wait|wrap|test-only|help|usage|version|clusters)(?:=|$)|-[aWhVM])/;

/** A word for a POSIX shell: as is where it holds only characters no shell treats specially, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_/.,:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The path as sbatch's --output reads it: sbatch replaces `%j`, `%x`, … in a file name,
 * and a backslash turns that off and escapes the next character.
 */
function literalOutputPath(path: string): string {
  return /[%\\]/.test(path) ? path.replace(/[%\\]/g, '\\$&') : path;
}

/** A job id as sbatch --parsable prints it: digits. Anything else is refused before it reaches a command line. */
function checkedJobId(id: string): string {
  if (!/^\d+$/.test(id)) throw new InputError({ file: 'Slurm job id' }, `${JSON.stringify(id)} is not a job id (sbatch's are digits)`);
  return id;
}

/** Submits `request` as one batch job and returns its id. A job sbatch refuses is a SlurmSubmitError (exit 2). */
export async function submitJob(request: SubmitRequest): Promise<string> {
  const { argv, cwd } = request;
  const sbatchArgs = request.sbatchArgs ?? [];
  if (argv.length === 0 || argv[0]!.startsWith('-'))
    throw new InputError({ file: 'Slurm job command' }, `must start with a program, not ${JSON.stringify(argv[0] ?? '')}`);
  const refused = sbatchArgs.find((arg) => REFUSED_OPTION.test(arg));
  if (refused !== undefined)
    throw new InputError(
      { file: 'sbatch options' },
      `${refused}: probe submits one job per command and reads its state back, so it does not take this option`,
    );
  const name = request.name.replace(/[^A-Za-z0-9._+-]/g, '_') || 'probe';
  const args = [
    '--no-requeue',
    ...sbatchArgs,
    '--parsable',
    `--job-name=${name}`,
    `--output=${literalOutputPath(resolve(cwd, request.outputFile))}`,
    `--chdir=${cwd}`,
    // `exec`: the job's process is the command itself, so its exit code or the signal that
    // ended it is the job's ExitCode, not a shell's 128+n.
    '--wrap',
    `exec ${argv.map(shellQuote).join(' ')}`,
  ];
  const out = await runSlurm('sbatch', args, { cwd, env: { ...process.env, ...request.env } });
  if (out.code !== 0) {
    // The controller away is not a refusal of the user's options: the caller asks again later.
    if (CONTROLLER_AWAY.test(out.stderr)) throw new SlurmCommandError('sbatch', slurmErrorLine('sbatch', out.stderr));
    throw new SlurmSubmitError(sbatchArgs, out.stderr);
  }
  // --parsable prints "id" or "id;cluster".
  const last = out.stdout.trim().split('\n').pop() ?? '';
  const id = /^(\d+)(?:;\S+)?$/.exec(last.trim())?.[1];
  if (!id)
    throw new SlurmCommandError('sbatch', `printed no job id (wanted "id" from --parsable, got ${JSON.stringify(last.slice(0, 200))})`);
  return id;
}

/**
 * sbatch's words for a controller it could not reach or that did not answer in time (a
 * restart, a failover, an overloaded slurmctld), as opposed to one that refused the job.
 */
const CONTROLLER_AWAY =
  /Unable to contact slurm controller|Socket timed out on send\/recv|Slurm controller not responding|Zero Bytes were transmitted or received|Connection refused|Transport endpoint is not connected/i;

/** Whether Slurm's answer was "no such job": squeue and scontrol say so for an id the controller has forgotten. */
const NO_SUCH_JOB = /Invalid job id specified/i;

/**
 * The state of each job in `ids`: squeue for the jobs still pending or running (one call
 * for all), then `scontrol show job` for each one squeue no longer lists or lists as
 * ended (its exit code). An id neither knows is `{ known: false }`.
 */
export async function jobStates(ids: readonly string[]): Promise<Map<string, JobState>> {
  const wanted = new Set(ids.map(checkedJobId));
  const states = new Map<string, JobState>();
  if (wanted.size === 0) return states;
  // squeue exits 1 ("Invalid job id specified") when the one id it is given is unknown to the
  // controller; with several ids it lists the ones it knows and exits 0.
  const queue = await runSlurm('squeue', ['-h', '-o', SQUEUE_FORMAT, '-j', [...wanted].join(',')]);
  if (queue.code !== 0 && !NO_SUCH_JOB.test(queue.stderr)) throw new SlurmCommandError('squeue', slurmErrorLine('squeue', queue.stderr));
  const listed = queue.code === 0 ? parseSqueue(queue.stdout, wanted) : new Map<string, JobState>();
  for (const id of wanted) {
    const live = listed.get(id);
    states.set(id, live?.known && !isFinalState(live.state) ? live : await endedJobState(id));
  }
  return states;
}

/** One job's state from `scontrol show job`, which keeps an ended job for the cluster's MinJobAge. */
async function endedJobState(id: string): Promise<JobState> {
  const out = await runSlurm('scontrol', ['show', 'job', '-o', id]);
  if (out.code !== 0) {
    if (NO_SUCH_JOB.test(out.stderr)) return { known: false };
    throw new SlurmCommandError('scontrol', slurmErrorLine('scontrol', out.stderr));
  }
  return parseScontrolJob(out.stdout, id);
}

/** Cancels job `id` (scancel). A job that already ended, or that the controller has forgotten, is no error. */
export async function cancelJob(id: string): Promise<void> {
  const out = await runSlurm('scancel', [checkedJobId(id)]);
  if (out.code !== 0 && !NO_SUCH_JOB.test(out.stderr) && !/already completing or completed/i.test(out.stderr))
    throw new SlurmCommandError('scancel', slurmErrorLine('scancel', out.stderr));
}

/** Whether jobs can be submitted here: sbatch is on PATH and a controller answers sinfo. */
export async function slurmAvailable(): Promise<boolean> {
  try {
    const [sbatch, sinfo] = await Promise.all([
      runSlurm('sbatch', ['--version']),
      runSlurm('sinfo', ['-h', '-o', '%a'], { timeoutMs: 20_000 }),
    ]);
    return sbatch.code === 0 && sinfo.code === 0 && sinfo.stdout.trim() !== '';
  } catch {
    return false;
  }
}
