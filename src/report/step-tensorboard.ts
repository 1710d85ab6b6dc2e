/**
 * One scoring verb's scores of one checkpoint as TensorBoard scalars, for `probe bpb|mcq|
 * passk --tensorboard DIR --step N`: the point the watch's trend would have for it (the
 * same values and intervals, trend.ts), under the watch's tags, in a file of its own:
 * `DIR/<run>/events.out.tfevents.<step, 16 digits>.probe-<verb>`.
 *
 * One file per (step, verb), written whole (temporary file, then rename): scoring the same
 * checkpoint again replaces its file, so a point is never there twice. Zero-padded, the
 * names sort by step, which is the order TensorBoard reads a run's files in (both loaders):
 * a tag's steps never go backwards across them, whatever order the checkpoints were scored
 * in — read from the start. A file that appears before ones a running TensorBoard has read
 * is the caveat (docs/watch.md, "From the scoring verbs").
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { encodeEvent, FILE_VERSION, type Scalar } from '../tensorboard/event.ts';
import { tfRecord } from '../tensorboard/record.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { idFileName } from '../util/file-name.ts';
import { scalarsOf } from './trend-tensorboard.ts';
import { trendPoints, type WatchedScores } from './trend.ts';

/** The verbs that write a point, each under its trend probe's tags. */
export type ScoringVerb = 'bpb' | 'mcq' | 'passk';

/** 16 digits hold every step an event can (Number.MAX_SAFE_INTEGER), so names sort by step whatever the step. */
const STEP_DIGITS = 16;

/**
 * Never `events.out.tfevents.0.probe`, the watch's file: `.probe-<verb>` after the padded
 * step. (A watch and the verbs writing one run's tags would still cross: docs/watch.md.)
 */
export const stepEventsFile = (step: number, verb: ScoringVerb) =>
  `events.out.tfevents.${String(step).padStart(STEP_DIGITS, '0')}.probe-${verb}`;

/** What a verb's scores of one checkpoint are as a point: the verb's result in its probe's place, nothing else. */
export type VerbScores = Pick<WatchedScores, 'checkpoint'> & Partial<Pick<WatchedScores, 'bpb' | 'mcq' | 'passk'>>;

/** The scalars of the point (its value, and its 95% interval where the trend has one): empty where the trend has no value (an infinite BPB). */
export function stepScalars(verb: ScoringVerb, scores: VerbScores, step: number): Scalar[] {
  const [point] = trendPoints([
    { code_bpb: null, bpb: null, mcq: null, passk: null, asap: null, ...scores, label: scores.checkpoint, series: '', step },
  ]);
  return scalarsOf(point!, verb);
}

/** The events file's bytes: its file_version, then the point's one event at `step`, stamped `wallTime` (seconds since the epoch). */
export function stepEvents(step: number, scalars: readonly Scalar[], wallTime: number): Buffer {
  return Buffer.concat([
    tfRecord(encodeEvent({ wallTime, step: 0, fileVersion: FILE_VERSION })),
    tfRecord(encodeEvent({ wallTime, step, scalars })),
  ]);
}

/** What writing a point did, for what a running TensorBoard will make of it. */
export interface StepWrite {
  file: string;
  /** A point of this verb was already at this step (a rerun): its file is replaced. */
  replaced: boolean;
  /** Steps of this verb's points already in the run after this one: a running TensorBoard drops them on reading it. */
  later: number[];
}

const OWN_FILE = /^events\.out\.tfevents\.(\d+)\.probe-(bpb|mcq|passk)$/;

/** Writes (or replaces) the point's file under `dir`'s run, and says where it landed among the files there. */
export function writeStepEvents(
  dir: string,
  run: string,
  verb: ScoringVerb,
  step: number,
  scalars: readonly Scalar[],
  wallTime: number,
): StepWrite {
  const runDir = join(dir, idFileName(run));
  const file = join(runDir, stepEventsFile(step, verb));
  const steps = (existsSync(runDir) ? readdirSync(runDir) : []).flatMap((name) => {
    const m = OWN_FILE.exec(name);
    return m && m[2] === verb ? [Number(m[1])] : [];
  });
  writeFileAtomic(file, stepEvents(step, scalars, wallTime), { tmpStem: `.probe-${verb}-${step}` });
  return { file, replaced: steps.includes(step), later: steps.filter((s) => s > step).sort((a, b) => a - b) };
}
