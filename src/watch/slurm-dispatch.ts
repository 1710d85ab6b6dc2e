/**
 * `probe watch --slurm`: each checkpoint's rungs as Slurm jobs, submitted with the user's
 * own sbatch options; probe only submits and reads back (squeue, scontrol), never
 * schedules. A job runs this same watch command with `--job`: its engine starts inside the
 * job, and it writes one checkpoint's stage into a run directory of its own under `jobs/`
 * (job-book.ts), so no two jobs write one file.
 *
 * Two stages per checkpoint, because the decision on pass@K and ASAP is made from the
 * cheap scores of the checkpoints before it: the cheap rungs' job, then — once every
 * earlier checkpoint of its training run is decided, so the decisions are those a watch in
 * one process makes — the pass@K and ASAP job where the decision says so.
 *
 * A job that ends without its result (cancelled, pre-empted, timed out, its node lost) is
 * submitted again, `retries` times at most; one that recorded a failure (bad input, a
 * server that does not answer) is the checkpoint's failure, as in one process. A restarted
 * watch finds its jobs in slurm.jsonl: those still queued or running are waited for, and a
 * stage whose result a job already wrote is collected, never submitted again.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { ProbeError } from '../errors.ts';
import { jobStates, submitJob } from '../slurm/jobs.ts';
import { ControllerPatience } from '../slurm/patience.ts';
import { SLURM_DEFAULTS, type SlurmSettings } from '../slurm/settings.ts';
import { isFinalState, type JobState } from '../slurm/state.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { JobBook, type JobStage, jobDir, type SubmittedJob } from './job-book.ts';
import { type CheapEvent, type FailedEvent, type ScoredEvent, WatchLog } from './log.ts';
import type { HeavyDecision } from './plan.ts';
import { type Found, parseFound } from './found.ts';

/** What a job records as the decision on pass@K and ASAP: not its to make. */
export const JOB_DECISION: HeavyDecision = { heavy: false, reason: 'decided by the watch that submitted this job' };

/** What the dispatcher needs of the watch it serves. */
export interface WatchSide {
  runDir: string;
  log: WatchLog;
  /** Whether pass@K or ASAP would run at all (`-n`, `--asap-runs`). */
  heavyWanted: boolean;
  open(found: Found): Checkpoint | undefined;
  decide(series: string, bpb: number | null): HeavyDecision;
  recordScored(found: Found, checkpoint: string, heavy: Pick<ScoredEvent, 'passk' | 'asap'>): void;
  /** A checkpoint's cheap scores (and the decision) recorded and said. */
  decided(cheap: CheapEvent): void;
  finished(cheap: CheapEvent): void;
  fail(found: Found, checkpoint: string, stage: FailedEvent['stage'], error: ProbeError): void;
  tell(key: string, text: string): void;
}

export class SlurmDispatch {
  private readonly book: JobBook;
  /** Cheap results collected and not yet decided (an earlier checkpoint of the run is still out). */
  private readonly waiting = new Map<string, { found: Found; cheap: CheapEvent }>();

  /** squeue, scontrol and sbatch failing while the controller is away: asked again at the next poll. */
  private readonly patience = new ControllerPatience(SLURM_DEFAULTS.unreachableS * 1000);

  constructor(
    private readonly side: WatchSide,
    private readonly s: SlurmSettings,
  ) {
    this.book = new JobBook(side.runDir);
  }

  /** Checkpoints whose submission the controller did not answer: taken up again at the next poll. */
  private readonly unanswered = new Set<string>();

  /** Jobs out, results waiting for a decision, or submissions to make again: a `--once` watch is not done. */
  busy(): boolean {
    return this.book.outstanding().length > 0 || this.waiting.size > 0 || this.unanswered.size > 0;
  }

  /** A complete checkpoint not yet scored: its next stage, submitted (or collected, where a job already wrote it). */
  async take(found: Found): Promise<void> {
    if (this.book.outstandingFor(found.key) || this.waiting.has(found.key)) return;
    const state = this.side.log.state(found.key);
    const stage: JobStage | undefined = !state.cheap ? 'cheap' : state.cheap.heavy.heavy && this.side.heavyWanted ? 'heavy' : undefined;
    if (!stage) {
      const ckpt = this.side.open(found);
      if (!ckpt) return;
      this.side.recordScored(found, ckpt.name, { passk: null, asap: null });
      return this.side.finished(state.cheap!);
    }
    if (this.collected(found, stage, undefined)) return;
    if (!this.side.open(found)) return; // recorded in run.json, or its failure said, before any job
    await this.submit(found, stage, 1);
  }

  /** Reads back the jobs out there; collects, retries or fails those that ended; decides what can be decided. */
  async collect(): Promise<void> {
    const out = this.book.outstanding();
    const states = out.length
      ? await this.patience.attempt(
          () => jobStates(out.map((j) => j.job)),
          (line) => this.side.tell('slurm', line),
        )
      : new Map<string, JobState>();
    if (!states) return; // the controller did not answer: every job is as it was
    const running: string[] = [];
    for (const job of out) {
      const state = states.get(job.job);
      // A state probe does not know is not an end: the job may still write its result.
      if (state?.known && !isFinalState(state.state)) {
        running.push(`job ${job.job} ${basename(job.entry)} ${job.stage} ${state.state}${state.reason ? ` (${state.reason})` : ''}`);
        continue;
      }
      await this.ended(job, state?.known ? state.state : 'gone');
    }
    await this.decideWaiting();
    this.side.tell('slurm', running.length ? `slurm: ${running.join('; ')}` : 'slurm: no job out');
  }

  private async submit(found: Found, stage: JobStage, attempt: number): Promise<void> {
    const dir = jobDir(this.side.runDir, found.key, found.entry.path);
    mkdirSync(dir, { recursive: true });
    const foundFile = join(dir, 'found.json');
    writeFileAtomic(foundFile, `${JSON.stringify(found)}\n`);
    const job = await this.patience.attempt(
      () =>
        submitJob({
          argv: [...this.s.command, '--job', foundFile, '--job-stage', stage],
          name: `probe-${stage}-${basename(found.entry.path)}`,
          // One file per try: a retry's output does not overwrite the log of the try that was pre-empted.
          outputFile: join(dir, `slurm-${stage}-try${attempt}.out`),
          cwd: process.cwd(),
          sbatchArgs: this.s.sbatch,
        }),
      (line) => this.side.tell('slurm', line),
    );
    if (job === undefined) {
      this.unanswered.add(found.key); // not submitted: the checkpoint is taken up again at the next poll
      return;
    }
    this.unanswered.delete(found.key);
    this.book.append({
      event: 'submitted',
      key: found.key,
      entry: found.entry.path,
      series: found.series,
      step: found.step,
      stage,
      job,
      attempt,
      dir,
      at: new Date().toISOString(),
    });
    this.side.tell(
      `job:${found.key}`,
      `watch: ${basename(found.entry.path)}: ${stage} rungs in Slurm job ${job}${attempt > 1 ? ` (try ${attempt})` : ''}`,
    );
  }

  /**
   * Takes a job's result into the watch's record where its run directory holds the stage's
   * result ('result'), or a failure it recorded after `since` ('failed'); undefined where neither.
   */
  private collected(found: Found, stage: JobStage, since: string | undefined): 'result' | 'failed' | undefined {
    const { cheap, scored, failed } = new WatchLog(jobDir(this.side.runDir, found.key, found.entry.path)).state(found.key);
    if (stage === 'cheap' && cheap) {
      this.waiting.set(found.key, { found, cheap });
      return 'result';
    }
    if (stage === 'heavy' && scored) {
      this.side.recordScored(found, scored.checkpoint, { passk: scored.passk, asap: scored.asap });
      this.side.finished(this.side.log.state(found.key).cheap!);
      return 'result';
    }
    if (failed && since !== undefined && failed.at > since) {
      this.side.fail(found, failed.checkpoint, failed.stage, new ProbeError(failed.message, { exitCode: failed.exit_code === 2 ? 2 : 1 }));
      return 'failed';
    }
    return undefined;
  }

  private async ended(job: SubmittedJob, state: string): Promise<void> {
    const found = readFound(job.dir);
    const got = this.collected(found, job.stage, job.at);
    const outcome = got === 'result' ? 'collected' : got === 'failed' ? 'failed' : job.attempt <= this.s.retries ? 'retried' : 'gave up';
    this.book.append({ event: 'ended', key: job.key, stage: job.stage, job: job.job, state, outcome, at: new Date().toISOString() });
    if (outcome === 'retried') {
      // Slurm says the job ended: the run directory's lock it may have left on its node is no one's now.
      rmSync(join(job.dir, '.lock'), { force: true });
      this.side.tell(`job:${job.key}`, `watch: ${basename(job.entry)}: Slurm job ${job.job} ended ${state} without its result`);
      await this.submit(found, job.stage, job.attempt + 1);
    } else if (outcome === 'gave up') {
      this.side.fail(
        found,
        found.spec,
        job.stage === 'cheap' ? 'cheap' : 'pass@k',
        new ProbeError(
          `${job.entry}: ${job.stage} rungs: Slurm job ${job.job} ended ${state} without its result (try ${job.attempt} of ${this.s.retries + 1}); its output: ${join(job.dir, `slurm-${job.stage}-try${job.attempt}.out`)}`,
        ),
      );
    }
  }

  /** Cheap results decided in training order within their run: each once no earlier checkpoint of the run is still out. */
  private async decideWaiting(): Promise<void> {
    const waiting = [...this.waiting.values()].sort((a, b) => a.cheap.step - b.cheap.step);
    for (const { found, cheap } of waiting) {
      const earlier = this.book.outstanding().some((j) => j.stage === 'cheap' && j.series === cheap.series && j.step < cheap.step);
      if (earlier) continue;
      const decided: CheapEvent = { ...cheap, heavy: this.side.decide(cheap.series, cheap.bpb?.bpb ?? null) };
      this.waiting.delete(found.key);
      this.side.decided(decided);
      await this.take(found); // its next stage, from the watch's record
    }
  }
}

/** The entry a job was given (written by `submit`, beside its run directory). */
export function readFound(dir: string): Found {
  return parseFound(join(dir, 'found.json'));
}
