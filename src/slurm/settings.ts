/**
 * What a verb's `--slurm` flags ask of the jobs it submits (`probe watch`, `probe screen`):
 * the user's sbatch options, how often work whose job ended without its result is
 * submitted again, and the command a job runs (the verb itself, with its hidden job flags
 * added). Plain data: the verbs' dispatchers act on it.
 */
export interface SlurmSettings {
  /** The user's sbatch options, passed through as given (partition, GPUs, time, account…). */
  sbatch: string[];
  /** Submissions of a piece of work after the first, where a job ends without its result. */
  retries: number;
  /** The argv that runs the verb again (the job adds its own flags, `--job FILE …`). */
  command: string[];
}

/**
 * The defaults, written once: two more tries for a job that ends without its result (a
 * pre-emption or a lost node is common, a third in a row says something is wrong); a
 * look at squeue every 3 s while a verb waits for its jobs (often enough for a stage of
 * minutes, rarely enough not to load the controller); and 15 minutes of a controller that
 * does not answer before a verb gives up (a restart or failover takes seconds to minutes).
 */
export const SLURM_DEFAULTS = { retries: 2, pollS: 3, unreachableS: 900 } as const;
