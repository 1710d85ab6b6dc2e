/**
 * `--tensorboard DIR` on the scoring verbs (`probe bpb|mcq|passk`): a trainer's eval hook
 * scores the checkpoint it just saved, and the point lands beside its loss curve — in the
 * TensorBoard run of its training run, at its step, under the watch's tags.
 *
 * Where each checkpoint's point goes is settled before any scoring, so a bad `--step` or
 * DIR costs seconds: its run is the training run the watch would file it under (step.ts,
 * the checkpoint's parent standing for the watched directory), or `--tb-run`; its step is
 * `--step`, else what its files or name say, as the watch reads them. The points are
 * written after the verb's results, which a failed write never takes away.
 */
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { EnvironmentError, InputError, systemReason } from '../errors.ts';
import { type ScoringVerb, type StepWrite, stepScalars, type VerbScores, writeStepEvents } from '../report/step-tensorboard.ts';
import { ensureOutputDir } from '../store/output-path.ts';
import { idFileName } from '../util/file-name.ts';
import { trainingRun, trainingStep } from './step.ts';

export interface VerbTensorboardSettings {
  /** `--tensorboard`: the log directory TensorBoard is pointed at. */
  dir: string;
  /** `--step`: the training step of the one checkpoint scored. */
  step?: number | undefined;
  /** `--tb-run`: the TensorBoard run, instead of the checkpoint's training run. */
  run?: string | undefined;
}

/** Where one checkpoint's point goes. */
export interface PointPlace {
  run: string;
  step: number;
  /** Where the step came from: `--step`, `config.json train_steps`, `the name`, … */
  source: string;
}

export interface VerbTensorboard {
  dir: string;
  verb: ScoringVerb;
  /** By checkpoint name (`Checkpoint.name`, what results carry). */
  places: Map<string, PointPlace>;
}

/** A checkpoint's file or directory, where it has one (a server has none: its name is a URL). */
function pathOf(ckpt: Checkpoint): string | undefined {
  return ckpt.kind === 'directory' ? ckpt.dir : ckpt.kind === 'engine' ? ckpt.path : undefined;
}

function placeOf(ckpt: Checkpoint, s: VerbTensorboardSettings): PointPlace {
  const path = pathOf(ckpt);
  if (path === undefined && s.run === undefined)
    throw new InputError(
      { file: '--tb-run' },
      `${ckpt.name} is a server: it has no training run of its own to name the TensorBoard run after`,
    );
  const run = s.run ?? trainingRun(path!, dirname(path!));
  if (s.step !== undefined) return { run, step: s.step, source: '--step' };
  const at = path === undefined ? undefined : trainingStep(path);
  if (!at)
    throw new InputError(
      { file: '--step' },
      `${ckpt.name} says no training step (no config.json train_steps or global_step, no trainer_state.json, no number in its name): give it`,
    );
  return { run, ...at };
}

/** Checks DIR and each checkpoint's place before any scoring; InputError naming the flag where one is wrong. */
export function planVerbTensorboard(s: VerbTensorboardSettings, verb: ScoringVerb, checkpoints: readonly Checkpoint[]): VerbTensorboard {
  if (s.step !== undefined && checkpoints.length !== 1)
    throw new InputError(
      { file: '--step' },
      `names the step of one checkpoint, and ${checkpoints.length} are scored: leave it out, and each checkpoint's own step is read`,
    );
  if (s.run === '') throw new InputError({ file: '--tb-run' }, 'a TensorBoard run needs a name');
  const places = new Map<string, PointPlace>();
  const taken = new Map<string, string>();
  for (const ckpt of checkpoints) {
    const place = placeOf(ckpt, s);
    // One file per (run, step, verb): a second checkpoint there would replace the first's point.
    const key = `${place.run}\0${place.step}`;
    const other = taken.get(key);
    if (other !== undefined)
      throw new InputError(
        { file: '--tensorboard' },
        `${other} and ${ckpt.name} are both at step ${place.step} of run ${place.run}: score them into separate runs (--tb-run)`,
      );
    taken.set(key, ckpt.name);
    places.set(ckpt.name, place);
  }
  ensureOutputDir(s.dir, '--tensorboard');
  for (const run of new Set([...places.values()].map((p) => p.run))) {
    const runDir = join(s.dir, idFileName(run));
    if (statSync(runDir, { throwIfNoEntry: false })?.isDirectory() === false)
      throw new InputError({ file: runDir }, `the TensorBoard run ${run} is a file here, not a directory`);
  }
  return { dir: s.dir, verb, places };
}

/** One line per point written, or why a checkpoint has none. */
export interface PointWritten {
  checkpoint: string;
  step: number;
  /** Where the step came from (PointPlace.source): said, as the watch says it, for when it surprises. */
  source: string;
  tags: string[];
  /** Absent where the score is no finite number (an infinite BPB): no point. */
  write?: StepWrite;
}

/**
 * Writes each scored checkpoint's point (failed checkpoints have none). Call it after the
 * verb's results are out: a write that fails is an EnvironmentError naming the file, and the
 * results stand.
 */
export function writeVerbTensorboard(board: VerbTensorboard, scores: readonly VerbScores[], now = Date.now()): PointWritten[] {
  const written: PointWritten[] = [];
  for (const s of scores) {
    const place = board.places.get(s.checkpoint);
    if (!place) continue;
    const scalars = stepScalars(board.verb, s, place.step);
    if (scalars.length === 0) {
      written.push({ checkpoint: s.checkpoint, step: place.step, source: place.source, tags: [] });
      continue;
    }
    try {
      const write = writeStepEvents(board.dir, place.run, board.verb, place.step, scalars, now / 1000);
      written.push({ checkpoint: s.checkpoint, write, step: place.step, source: place.source, tags: scalars.map((x) => x.tag) });
    } catch (error) {
      throw new EnvironmentError(
        `--tensorboard ${board.dir}: cannot write ${s.checkpoint}'s point (run ${place.run}, step ${place.step}): ${systemReason(error)}; the results are complete without it`,
        { cause: error },
      );
    }
  }
  return written;
}
