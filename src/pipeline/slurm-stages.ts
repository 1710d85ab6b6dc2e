/**
 * `probe screen --slurm`: the ladder's stages (ladder-stages.ts) as Slurm jobs, one per
 * checkpoint and stage, submitted with the user's own sbatch options; probe only submits
 * and reads back (squeue, scontrol — never sacct), Slurm schedules. A job runs this same
 * screen command with `--job FILE --job-stage STAGE`: its engine starts inside the job, and
 * it writes its stage for its one checkpoint into a run directory of its own,
 * `<out>/jobs/<stage>/<checkpoint>-<hash>/` (so no two jobs write one file), ending with
 * result.json (stage-job.ts), which the screen collects. The ladder then decides the next
 * stage from the collected results exactly as in one process.
 *
 * A job that ends without its result (cancelled, pre-empted, timed out, its node lost) is
 * submitted again, `retries` times at most; one that recorded a failure is the
 * checkpoint's failure, as in one process. The screen's job book (slurm.jsonl) is what a
 * rerun after a kill reads: a job still out is waited for, a result already written is
 * collected, and finished work is never submitted again.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { bosUseOf } from '../backends/bos.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { ProbeError } from '../errors.ts';
import { enterStage } from '../report/run-stages.ts';
import { jobStates, submitJob } from '../slurm/jobs.ts';
import { ControllerPatience } from '../slurm/patience.ts';
import { SLURM_DEFAULTS, type SlurmSettings } from '../slurm/settings.ts';
import { isFinalState } from '../slurm/state.ts';
import { type BookedEnd, type BookedSubmission, JobBook, jobDir } from '../store/job-book.ts';
import type { RunDir } from '../store/run-dir.ts';
import { interruptedBy } from '../util/interrupt.ts';
import type { Failure, ScoringRun } from './checkpoint-loop.ts';
import { type LadderStage, STAGE_LABELS, type StageOutcome, type StageResults, type StageRunner } from './ladder-stages.ts';
import { failureOf, JOB_RESULT_FILE, readStageJobResult, type StageJobResult, writeStageJobInput } from './stage-job.ts';

export interface StageJob extends BookedSubmission {
  stage: LadderStage;
  /** The checkpoint's name, as results carry it. */
  checkpoint: string;
}

export interface StageJobEnd extends BookedEnd {
  stage: LadderStage;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stages as Slurm jobs, booked in the run directory (which `--slurm` requires: the jobs write under it). */
export function slurmStages(run: Pick<ScoringRun, 'quiet'> & { dir: RunDir }, slurm: SlurmSettings): StageRunner {
  return new SlurmStages(run.dir, slurm, run.quiet);
}

class SlurmStages implements StageRunner {
  private readonly book: JobBook<StageJob, StageJobEnd>;
  private readonly runDir: string;
  /** The last progress line said, so a poll every few seconds says only what changed. */
  private said = '';
  /** squeue, scontrol and sbatch failing while the controller is away: asked again at the next poll. */
  private readonly patience = new ControllerPatience(SLURM_DEFAULTS.unreachableS * 1000);
  /** Work whose submission the controller did not answer: submitted at the next poll. */
  private unsubmitted: Array<{ stage: LadderStage; checkpoint: string; attempt: number }> = [];

  constructor(
    private readonly dir: RunDir,
    private readonly slurm: SlurmSettings,
    private readonly quiet: boolean,
    private readonly pollMs = SLURM_DEFAULTS.pollS * 1000,
  ) {
    this.runDir = resolve(dir.dir);
    this.book = new JobBook(this.runDir);
  }

  async run<S extends LadderStage>(stage: S, checkpoints: readonly Checkpoint[]): Promise<StageOutcome<S>> {
    enterStage(STAGE_LABELS[stage]);
    const ended = new Map<string, StageJobResult<StageResults[S]> | Failure>();
    for (const ckpt of checkpoints) {
      const key = jobKey(stage, ckpt.name);
      const dir = this.dirOf(stage, ckpt.name);
      // Out there from a screen before this one (killed): waited for, not submitted again.
      if (this.book.outstandingFor(key)) continue;
      const written = readStageJobResult<StageResults[S]>(dir, ckpt.name);
      // Written before and seen (or not) by a screen before this one: collected, never computed again.
      if (written && !written.failure) ended.set(ckpt.name, written);
      // A recorded failure is tried again, as a rerun in one process tries a failed checkpoint again.
      else await this.submit(stage, ckpt.name, 1);
    }
    const mine = () => this.book.outstanding().filter((j) => j.stage === stage && checkpoints.some((c) => c.name === j.checkpoint));
    while (mine().length > 0 || this.unsubmitted.length > 0) {
      if (interruptedBy())
        throw new ProbeError(`interrupted while waiting for Slurm jobs (${this.runDir}/slurm.jsonl: a rerun with --resume waits for them)`);
      await sleep(this.pollMs);
      const again = this.unsubmitted;
      this.unsubmitted = [];
      for (const work of again) await this.submit(work.stage, work.checkpoint, work.attempt);
      if (mine().length > 0) await this.poll(stage, mine(), ended);
    }
    const results: StageResults[S][] = [];
    const failures: Failure[] = [];
    let asap: StageOutcome<S>['asap'];
    for (const ckpt of checkpoints) {
      const got = ended.get(ckpt.name);
      // How the job served it, into this run's run.json as one process records it.
      const served = got instanceof Error ? undefined : got?.serving;
      if (served) this.dir.recordServing(ckpt.name, { bos: served.bos && bosUseOf(served.bos), engine: served.engine });
      if (got instanceof Error) failures.push(got);
      else if (got?.failure) failures.push(failureOf(got.failure));
      else if (got?.result) results.push(got.result);
      asap ??= got instanceof Error ? undefined : got?.asap && { out: join(this.runDir, 'jobs', 'asap'), instances: got.asap.instances };
    }
    return { results, failures, ...(asap ? { asap } : {}) };
  }

  private dirOf(stage: LadderStage, checkpoint: string): string {
    return jobDir(join(this.runDir, 'jobs', stage), jobKey(stage, checkpoint), checkpoint);
  }

  /** The jobs' states read back (squeue, then scontrol for those it no longer lists); those that ended collected, retried or failed. */
  private async poll<S extends LadderStage>(
    stage: S,
    out: StageJob[],
    ended: Map<string, StageJobResult<StageResults[S]> | Failure>,
  ): Promise<void> {
    const states = await this.patience.attempt(
      () => jobStates(out.map((j) => j.job)),
      (line) => this.say(line),
    );
    if (!states) return; // the controller did not answer: every job is as it was
    const running: string[] = [];
    for (const job of out) {
      const state = states.get(job.job);
      // A state probe does not know is not an end: the job may still write its result.
      if (state?.known && !isFinalState(state.state)) {
        running.push(`job ${job.job} ${basename(job.checkpoint)} ${state.state}${state.reason ? ` (${state.reason})` : ''}`);
        continue;
      }
      const end = state?.known ? state.state : 'gone';
      const written = readStageJobResult<StageResults[S]>(job.dir, job.checkpoint);
      const outcome = written ? (written.failure ? 'failed' : 'collected') : job.attempt <= this.slurm.retries ? 'retried' : 'gave up';
      this.book.append({ event: 'ended', key: job.key, stage, job: job.job, state: end, outcome, at: new Date().toISOString() });
      if (written) ended.set(job.checkpoint, written);
      else if (outcome === 'retried') {
        this.say(`slurm: ${STAGE_LABELS[stage]}: ${job.checkpoint}: job ${job.job} ended ${end} without its result`);
        // Slurm says the job ended: the run directory's lock it may have left on its node is no one's now.
        rmSync(join(job.dir, '.lock'), { force: true });
        await this.submit(stage, job.checkpoint, job.attempt + 1);
      } else
        ended.set(
          job.checkpoint,
          new ProbeError(
            `${job.checkpoint}: ${STAGE_LABELS[stage]}: Slurm job ${job.job} ended ${end} without its result (try ${job.attempt} of ${this.slurm.retries + 1}); its output: ${join(job.dir, outputName(job.attempt))}`,
          ),
        );
    }
    if (running.length) this.say(`slurm: ${STAGE_LABELS[stage]}: ${running.join('; ')}`);
  }

  private async submit(stage: LadderStage, checkpoint: string, attempt: number): Promise<void> {
    const dir = this.dirOf(stage, checkpoint);
    mkdirSync(dir, { recursive: true });
    // A failure an earlier job recorded is not this job's: only what this one writes is collected.
    rmSync(join(dir, JOB_RESULT_FILE), { force: true });
    const input = writeStageJobInput(dir, { checkpoint });
    const job = await this.patience.attempt(
      () =>
        submitJob({
          argv: [...this.slurm.command, '--job', input, '--job-stage', stage],
          name: `probe-${stage}-${basename(checkpoint)}`,
          outputFile: join(dir, outputName(attempt)),
          cwd: process.cwd(),
          sbatchArgs: this.slurm.sbatch,
        }),
      (line) => this.say(line),
    );
    if (job === undefined) {
      this.unsubmitted.push({ stage, checkpoint, attempt });
      return;
    }
    this.book.append({
      event: 'submitted',
      key: jobKey(stage, checkpoint),
      stage,
      checkpoint,
      job,
      attempt,
      dir,
      at: new Date().toISOString(),
    });
    this.say(`slurm: ${STAGE_LABELS[stage]}: ${checkpoint} in Slurm job ${job}${attempt > 1 ? ` (try ${attempt})` : ''}`);
  }

  private say(text: string): void {
    if (this.quiet || text === this.said) return;
    this.said = text;
    process.stderr.write(`${text}\n`);
  }
}

/** A job's Slurm output, one file per try: a retry's output does not overwrite the log of the try that was pre-empted. */
function outputName(attempt: number): string {
  return `slurm-try${attempt}.out`;
}

/** A checkpoint's stage in the job book. */
function jobKey(stage: LadderStage, checkpoint: string): string {
  return `${stage}:${checkpoint}`;
}
