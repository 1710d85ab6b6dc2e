/**
 * The ladder's work on checkpoints behind one seam: "run this stage for these
 * checkpoints". The ladder (ladder.ts) decides which checkpoints each stage gets, from the
 * stage before, and does not care where the work runs: in this process (`localStages`,
 * each checkpoint in turn through forEachCheckpoint; ASAP through its episode run), or as
 * one Slurm job per checkpoint (slurm-stages.ts), each of which runs `localStages` on its
 * one checkpoint (`runLadderJob`) into a run directory of its own.
 */
import { join } from 'node:path';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { BpbResult } from '../probes/bpb.ts';
import type { McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import type { RunDir } from '../store/run-dir.ts';
import type { AsapResult } from '../swe/run.ts';
import { forEachCheckpoint, type Failure, runLoopOptions, type ScoringRun } from './checkpoint-loop.ts';
import type { LadderSettings } from './ladder.ts';
import { asapTasksOf, runAsapRung } from './rungs/asap.ts';
import { scoreBpbAndMcq } from './rungs/cheap.ts';
import { passkRunItems, passkSandboxes, scorePasskRung } from './rungs/passk.ts';
import { loggedScorer } from './rungs/scorer.ts';
import { failureRecord, type StageJobResult, writeStageJobResult } from './stage-job.ts';

/** The ladder's per-checkpoint stages: BPB and MCQ, pass@K, ASAP (SWE) episodes. */
export type LadderStage = 'cheap' | 'passk' | 'asap';

/** Each stage's name in the run's progress (the names of SCREEN_STAGES). */
export const STAGE_LABELS: Record<LadderStage, string> = { cheap: 'bpb + mcq', passk: 'pass@k', asap: 'asap' };

export interface StageResults {
  cheap: { bpb: BpbResult; mcq: McqResult };
  passk: PasskResult;
  asap: AsapResult;
}

export interface StageOutcome<S extends LadderStage> {
  /** In the order of the checkpoints given, less those that failed. */
  results: StageResults[S][];
  failures: Failure[];
  /** The ASAP stage: where its episodes are, and the instances they ran on (less any the leak check excluded). */
  asap?: { out: string; instances: number } | undefined;
}

export interface StageRunner {
  run<S extends LadderStage>(stage: S, checkpoints: readonly Checkpoint[]): Promise<StageOutcome<S>>;
}

/** The stages in this process: each checkpoint's backend opened in turn, its items logged in the run directory as they finish. */
export function localStages(run: ScoringRun, s: LadderSettings): StageRunner {
  const { items, dir } = run;
  const stages: { [S in LadderStage]: (checkpoints: readonly Checkpoint[]) => Promise<StageOutcome<S>> } = {
    cheap: (checkpoints) =>
      forEachCheckpoint(checkpoints, runLoopOptions(run, STAGE_LABELS.cheap, 2 * items.length), (ckpt, backend, tick) =>
        scoreBpbAndMcq(ckpt, items, s.seed, loggedScorer(dir, ckpt, backend, tick)),
      ),
    passk: async (checkpoints) => {
      const tasks = new Map(s.tasks.map((t) => [t.instance_id, t]));
      const passkRun = { items: passkRunItems(items, s, tasks), tasks, pools: passkSandboxes() };
      try {
        return await forEachCheckpoint(checkpoints, runLoopOptions(run, STAGE_LABELS.passk, passkRun.items.length), (ckpt, backend, tick) =>
          scorePasskRung(ckpt, passkRun, s, loggedScorer(dir, ckpt, backend, tick)),
        );
      } finally {
        await passkRun.pools.close();
      }
    },
    asap: async (checkpoints) => {
      const asap = await runAsapRung(checkpoints, asapTasksOf(items, s), s, run, dir ? join(dir.dir, 'asap') : s.asapOut);
      return { results: asap.results, failures: asap.failures, asap: { out: asap.out, instances: asap.instances } };
    },
  };
  return { run: (stage, checkpoints) => stages[stage](checkpoints) };
}

/**
 * A Slurm job of a screen (`--job FILE --job-stage STAGE`): the stage for the run's one
 * checkpoint, in this process, into the job's run directory, and what it concluded in
 * result.json (stage-job.ts), where the screen collects it.
 */
export async function runLadderJob(run: ScoringRun & { dir: RunDir }, s: LadderSettings, stage: LadderStage): Promise<StageJobResult> {
  const outcome = await localStages(run, s).run(stage, run.checkpoints);
  const failure = outcome.failures[0];
  // Recorded in the job's run.json once its backend opened (checkpoint-loop.ts).
  const served = run.dir.manifest.checkpoints[0];
  const result: StageJobResult = {
    checkpoint: run.checkpoints[0]!.name,
    result: outcome.results[0] ?? null,
    failure: failure ? failureRecord(failure) : null,
    ...(outcome.asap ? { asap: outcome.asap } : {}),
    serving: { ...(served?.bos ? { bos: served.bos } : {}), ...(served?.engine ? { engine: served.engine } : {}) },
  };
  writeStageJobResult(run.dir.dir, result);
  return result;
}
