/**
 * `probe build`'s work: a probe set written to a file, with everything that can fail
 * early checked before the first replay — the tasks, the distractor checkpoint, that the
 * output path can take the file (written once, after every replay). Each replayed
 * trajectory is logged beside the output as it finishes (`<out>.progress.jsonl`), so a
 * killed build resumes; the log goes once the set and its quality report are written.
 */
import { resolve } from 'node:path';
import { resolveCheckpoint } from '../backends/checkpoint.ts';
import { openBackend } from '../backends/open.ts';
import { InputError } from '../errors.ts';
import type { RestoreMode } from '../replay/build.ts';
import type { ContextFormat } from '../replay/render-context.ts';
import { type SandboxReplaySettings, sandboxReplayOptions } from '../replay/sandbox-replay.ts';
import type { ProbeQualityReport } from '../report/probe-quality.ts';
import { TrajectoryBuildSchema } from '../schema/build-progress.ts';
import { checkOutputFile } from '../store/output-path.ts';
import { UnitLog } from '../store/unit-log.ts';
import { loadTasks } from '../verify/load-task.ts';
import {
  type BuildCounts,
  type BuildOutcome,
  buildProbeSet,
  countOutcomes,
  type TrajectoryBuild,
  trajectoriesHash,
  writeProbeItems,
  writeQualityReport,
} from './build.ts';

export interface BuildFileSettings {
  /** The probe items' file (.jsonl). */
  out: string;
  trajectories: string;
  includeUnresolved?: boolean | undefined;
  /** Task records: a directory of them, or a dataset file. */
  tasks: string;
  /** The namespace of SWE-bench rows' images (swebench/image-name.ts); null: the rows' own. */
  imageNamespace?: string | null | undefined;
  contexts: ContextFormat[];
  restore: RestoreMode;
  distractors: boolean;
  /** A checkpoint directory whose samples at T* are distractor candidates too. */
  distractorCkpt?: string | undefined;
  distractorSamples: number;
  replay: SandboxReplaySettings;
  /** Continue from `<out>.progress.jsonl`. */
  resume: boolean;
  quiet: boolean;
}

export interface BuiltFile extends BuildOutcome {
  counts: BuildCounts;
  quality: { file: string; report: ProbeQualityReport };
}

export async function buildProbeFile(s: BuildFileSettings): Promise<BuiltFile> {
  const tasks = await loadTasks(s.tasks, { imageNamespace: s.imageNamespace });
  const distractorCkpt = s.distractorCkpt ? resolveCheckpoint(s.distractorCkpt) : undefined;
  if (distractorCkpt && distractorCkpt.kind !== 'directory') {
    // A resumed build must sample from the same weights: it records the directory's content hash, which a server has not.
    throw new InputError(
      { file: distractorCkpt.name },
      `--distractor-ckpt takes a checkpoint directory run in process (Hugging Face or ONNX), not ${distractorCkpt.kind === 'server' ? 'a server URL' : 'a checkpoint an engine serves'} (its samples are recorded by the checkpoint's content hash)`,
    );
  }
  // The probe set is written once, after every replay: a path that cannot take it must fail now.
  checkOutputFile(s.out, '--out');
  const samplerBackend = distractorCkpt && s.distractors ? await openBackend(distractorCkpt) : undefined;
  const sampler = samplerBackend ? { name: s.distractorCkpt!, backend: samplerBackend, n: s.distractorSamples, seed: 0 } : undefined;
  const progressLog = UnitLog.open<TrajectoryBuild>(
    `${s.out}.progress.jsonl`,
    {
      trajectories: trajectoriesHash(s.trajectories),
      tasks: resolve(s.tasks),
      context: s.contexts,
      restore: s.restore,
      distractors: s.distractors,
      distractor_ckpt: distractorCkpt && s.distractors ? distractorCkpt.contentHash() : null,
      distractor_samples: s.distractorSamples,
      sandbox: s.replay.sandbox,
      repeats: s.replay.repeats,
      include_unresolved: Boolean(s.includeUnresolved),
    },
    { resume: s.resume, what: 'build', units: TrajectoryBuildSchema },
  );
  const outcome = await buildProbeSet({
    trajectories: s.trajectories,
    includeUnresolved: s.includeUnresolved,
    tasks,
    contexts: s.contexts,
    restore: s.restore,
    distractors: s.distractors,
    sampler,
    replay: sandboxReplayOptions(s.replay),
    quiet: s.quiet,
    memo: progressLog,
  }).finally(() => samplerBackend?.close());
  writeProbeItems(s.out, outcome.items);
  const quality = writeQualityReport(s.out, outcome.items, s.trajectories);
  progressLog.remove();
  return { ...outcome, counts: countOutcomes(outcome.trajectories), quality };
}
