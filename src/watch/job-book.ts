/**
 * The Slurm jobs of a `probe watch --slurm`, `slurm.jsonl` in its run directory: one line
 * when a job is submitted, one when the watch has seen it end and what it made of it. What
 * a restarted watch reads to find the jobs still out there (it waits for them instead of
 * submitting them again) and how many tries a checkpoint's stage has had. Each job scores
 * one checkpoint's stage into a run directory of its own under `jobs/` (so no two jobs
 * write one file), from which the watch collects the result into its own record.
 */
import { createHash } from 'node:crypto';
import { basename, join } from 'node:path';
import { JsonlLog } from '../store/jsonl-log.ts';

/** A checkpoint's cheap rungs, or its pass@K and ASAP (decided by the watch from the cheap ones, in training order). */
export type JobStage = 'cheap' | 'heavy';

export interface SubmittedJob {
  event: 'submitted';
  /** The checkpoint's key (as in watch.jsonl). */
  key: string;
  entry: string;
  /** Where the checkpoint sits in training: a cheap result waits for the earlier ones of its run. */
  series: string;
  step: number;
  stage: JobStage;
  job: string;
  /** 1 for the first try of this stage since the watch took the checkpoint up. */
  attempt: number;
  /** The job's run directory. */
  dir: string;
  at: string;
}

export interface EndedJob {
  event: 'ended';
  key: string;
  stage: JobStage;
  job: string;
  /** Slurm's last word on it (`COMPLETED`, `CANCELLED`, …; `gone` where Slurm no longer knows it). */
  state: string;
  /** collected: its result is in watch.jsonl; failed: it recorded a failure; retried; gave up after the last try. */
  outcome: 'collected' | 'failed' | 'retried' | 'gave up';
  at: string;
}

type JobEvent = SubmittedJob | EndedJob;

/** The run directory of a checkpoint's jobs: its entry's name, and a hash of its key so two entries of one name do not share one. */
export function jobDir(runDir: string, key: string, entry: string): string {
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 10);
  return join(runDir, 'jobs', `${basename(entry).replace(/[^\w.-]+/g, '_')}-${hash}`);
}

export class JobBook {
  private readonly log: JsonlLog<JobEvent>;
  /** Submitted jobs the watch has not seen end, by job id. */
  private readonly open = new Map<string, SubmittedJob>();
  private readonly submittedCount = new Map<string, number>();

  constructor(runDir: string) {
    this.log = new JsonlLog<JobEvent>(join(runDir, 'slurm.jsonl'), runDir);
    for (const e of this.log.read()) this.note(e);
  }

  private note(e: JobEvent): void {
    if (e.event === 'submitted') {
      this.open.set(e.job, e);
      this.submittedCount.set(e.key, (this.submittedCount.get(e.key) ?? 0) + 1);
    } else this.open.delete(e.job);
  }

  append(e: JobEvent): void {
    this.log.append(e);
    this.note(e);
  }

  /** Jobs out there: submitted, not seen to end. */
  outstanding(): SubmittedJob[] {
    return [...this.open.values()];
  }

  outstandingFor(key: string): SubmittedJob | undefined {
    return [...this.open.values()].find((j) => j.key === key);
  }

  /** Jobs ever submitted for a checkpoint (what "no job submitted twice" is checked by). */
  submissions(key: string): number {
    return this.submittedCount.get(key) ?? 0;
  }
}
