/**
 * A run directory's Slurm jobs, `slurm.jsonl`: one line when a job is submitted, one when
 * the run has seen it end and what it made of it. What a restarted run reads to find the
 * jobs still out there (it waits for them instead of submitting them again) and how many
 * tries a piece of work has had. The verbs that submit (`probe watch`, `probe screen`) add
 * their own fields to both lines; the book only keys them by `key` and `job`.
 */
import { createHash } from 'node:crypto';
import { basename, join } from 'node:path';
import { JsonlLog } from './jsonl-log.ts';

/** What every submission line holds. */
export interface BookedSubmission {
  event: 'submitted';
  /** The piece of work the job does (a verb's own key: a checkpoint, or a stage of one). */
  key: string;
  job: string;
  /** 1 for the first try of this work since the run took it up. */
  attempt: number;
  /** The job's run directory. */
  dir: string;
  at: string;
}

/** What every end line holds. */
export interface BookedEnd {
  event: 'ended';
  key: string;
  job: string;
  /** Slurm's last word on it (`COMPLETED`, `CANCELLED`, …; `gone` where Slurm no longer knows it). */
  state: string;
  /** collected: its result is the run's; failed: it recorded a failure; retried; gave up after the last try. */
  outcome: 'collected' | 'failed' | 'retried' | 'gave up';
  at: string;
}

/** A job's run directory under `parent`: the work's name, and a hash of its key so two of one name do not share one. */
export function jobDir(parent: string, key: string, name: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 10);
  return join(parent, `${basename(name).replace(/[^\w.-]+/g, '_')}-${hash}`);
}

export class JobBook<S extends BookedSubmission = BookedSubmission, E extends BookedEnd = BookedEnd> {
  private readonly log: JsonlLog<S | E>;
  /** Submitted jobs the run has not seen end, by job id. */
  private readonly open = new Map<string, S>();
  private readonly submittedCount = new Map<string, number>();

  constructor(runDir: string) {
    this.log = new JsonlLog<S | E>(join(runDir, 'slurm.jsonl'), runDir);
    for (const e of this.log.read()) this.note(e);
  }

  private note(e: S | E): void {
    if (e.event === 'submitted') {
      this.open.set(e.job, e as S);
      this.submittedCount.set(e.key, (this.submittedCount.get(e.key) ?? 0) + 1);
    } else this.open.delete(e.job);
  }

  append(e: S | E): void {
    this.log.append(e);
    this.note(e);
  }

  /** Jobs out there: submitted, not seen to end. */
  outstanding(): S[] {
    return [...this.open.values()];
  }

  outstandingFor(key: string): S | undefined {
    return [...this.open.values()].find((j) => j.key === key);
  }

  /** Jobs ever submitted for a key (what "no job submitted twice" is checked by). */
  submissions(key: string): number {
    return this.submittedCount.get(key) ?? 0;
  }
}
