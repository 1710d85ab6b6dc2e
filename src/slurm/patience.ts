/**
 * Riding out a controller that is briefly away. A cluster's slurmctld restarts, fails over,
 * or under load answers "Socket timed out on send/recv operation"; squeue, scontrol and
 * sbatch then fail for seconds to minutes. A watch that polls for days, or a screen waiting
 * hours for its jobs, must not end on that: a call that fails so is made again at the next
 * poll, and only when the controller has not answered for `limitMs` does the last error end
 * the run (nothing is lost either way: slurm.jsonl and the jobs' directories stay, and a
 * rerun picks them up).
 */
import { SlurmCommandError } from './command.ts';

export class ControllerPatience {
  /** When the first of the failures in a row happened; undefined while calls succeed. */
  private failingSince: number | undefined;

  constructor(private readonly limitMs: number) {}

  /**
   * `call`'s answer; undefined where it failed with a SlurmCommandError (the controller did
   * not answer, or answered with an error) while failures have lasted at most `limitMs`, after
   * saying so through `tell`. Past that, and for any other error, the error is thrown.
   */
  async attempt<T>(call: () => Promise<T>, tell: (line: string) => void): Promise<T | undefined> {
    try {
      const answer = await call();
      this.failingSince = undefined;
      return answer;
    } catch (error) {
      if (!(error instanceof SlurmCommandError)) throw error;
      const now = Date.now();
      this.failingSince ??= now;
      const forS = Math.round((now - this.failingSince) / 1000);
      if (now - this.failingSince > this.limitMs)
        throw new SlurmCommandError('slurm', `no answer for ${forS} s, the last: ${error.message}`, { cause: error });
      tell(
        `slurm: ${error.message} — asking again at the next look (failing for ${forS} s; gives up after ${Math.round(this.limitMs / 1000)} s)`,
      );
      return undefined;
    }
  }
}
