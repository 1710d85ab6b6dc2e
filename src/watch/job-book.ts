/**
 * The Slurm jobs of a `probe watch --slurm`, in its run directory's job book (slurm.jsonl,
 * store/job-book.ts): what a restarted watch reads to find the jobs still out there and
 * how many tries a checkpoint's stage has had. Each job scores
 * one checkpoint's stage into a run directory of its own under `jobs/` (so no two jobs
 * write one file), from which the watch collects the result into its own record.
 */
import { join } from 'node:path';
import { type BookedEnd, type BookedSubmission, JobBook as SlurmJobBook, jobDir as bookedJobDir } from '../store/job-book.ts';

/** A checkpoint's cheap rungs, or its pass@K and ASAP (decided by the watch from the cheap ones, in training order). */
export type JobStage = 'cheap' | 'heavy';

export interface SubmittedJob extends BookedSubmission {
  /** The checkpoint's key (as in watch.jsonl). */
  key: string;
  entry: string;
  /** Where the checkpoint sits in training: a cheap result waits for the earlier ones of its run. */
  series: string;
  step: number;
  stage: JobStage;
}

export interface EndedJob extends BookedEnd {
  stage: JobStage;
}

/** The run directory of a checkpoint's jobs, under `jobs/`: its entry's name, and a hash of its key. */
export function jobDir(runDir: string, key: string, entry: string): string {
  return bookedJobDir(join(runDir, 'jobs'), key, entry);
}

/** The watch's book: its lines carry the checkpoint's entry, place in training and stage. */
export class JobBook extends SlurmJobBook<SubmittedJob, EndedJob> {}
