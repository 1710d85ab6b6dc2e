/**
 * The trend as TensorBoard scalars, for `--tensorboard DIR`: one TensorBoard run (a
 * subdirectory of DIR, named after the training run) per series, each probe's value at
 * the checkpoint's training step under `probe/<key>`, its 95% interval under
 * `probe/<key>/low` and `probe/<key>/high` where it has one (`<key>`: TREND_PROBES,
 * `code_bpb` being the baseline).
 *
 * A run's file is a function of the trend alone — points in step order, one per step, each
 * stamped with the time its cheap rungs finished — so writing it again after a restart
 * yields the same bytes, and TensorBoard, which drops or reorders a tag's points when its
 * steps go backwards, never sees them do so. Within a point, one event per probe in
 * TREND_PROBES order: a checkpoint whose pass@K and ASAP finish after its cheap rungs were
 * written (a restarted watch) only adds events at the end.
 */
import { join } from 'node:path';
import { encodeEvent, FILE_VERSION, type Scalar } from '../tensorboard/event.ts';
import { type EventsFileUpdate, updateEventsFile } from '../tensorboard/events-file.ts';
import { tfRecord } from '../tensorboard/record.ts';
import { idFileName } from '../util/file-name.ts';
import { TREND_PROBES, type TrendPoint, type TrendProbe } from './trend.ts';

/**
 * Fixed, so a rewrite replaces the file rather than adding one beside it (TensorBoard reads
 * every file whose name holds `tfevents`, and would show both). `0` where TensorFlow writes
 * the time: a run's file is never started again under another name.
 */
export const EVENTS_FILE = 'events.out.tfevents.0.probe';

export const tensorboardTag = (key: string, part?: 'low' | 'high') => `probe/${key}${part ? `/${part}` : ''}`;

/** The scalars of one probe at one point: its value, and its interval where it has one. */
export function scalarsOf(point: TrendPoint, key: TrendProbe): Scalar[] {
  const v = point.values[key];
  if (!v) return [];
  return [
    { tag: tensorboardTag(key), value: v.value },
    ...(v.low === null ? [] : [{ tag: tensorboardTag(key, 'low'), value: v.low }]),
    ...(v.high === null ? [] : [{ tag: tensorboardTag(key, 'high'), value: v.high }]),
  ];
}

/**
 * Each series' events file: `wallTime` gives a point's time (seconds since the epoch).
 * Where two checkpoints of one series share a step, the first in the trend's order is the
 * one shown (TensorBoard keeps one value per step; the trend and results.json keep both).
 */
export function tensorboardRuns(trend: readonly TrendPoint[], wallTime: (p: TrendPoint) => number): Map<string, Buffer> {
  const bySeries = new Map<string, TrendPoint[]>();
  for (const p of trend) bySeries.set(p.series, [...(bySeries.get(p.series) ?? []), p]);
  const runs = new Map<string, Buffer>();
  for (const [series, points] of bySeries) {
    const inOrder = [...points].sort((a, b) => a.step - b.step).filter((p, i, all) => i === 0 || all[i - 1]!.step !== p.step);
    const records = [tfRecord(encodeEvent({ wallTime: wallTime(inOrder[0]!), step: 0, fileVersion: FILE_VERSION }))];
    for (const p of inOrder)
      for (const { key } of TREND_PROBES) {
        const scalars = scalarsOf(p, key);
        if (scalars.length) records.push(tfRecord(encodeEvent({ wallTime: wallTime(p), step: p.step, scalars })));
      }
    runs.set(idFileName(series), Buffer.concat(records));
  }
  return runs;
}

/**
 * The points an events file may hold now: in each training run, in step order, those up to
 * and including the first checkpoint whose pass@K and ASAP are still to come (`pending`).
 * Its later points wait for it, so that its pass@K and ASAP land at the end of the file, as
 * an append a running TensorBoard reads, and not in its middle, which would rewrite the file
 * (with `--slurm`, a later checkpoint's cheap scores often come before an earlier one's
 * pass@K and ASAP). A watch in one process finishes each checkpoint before the next, so it
 * holds nothing back.
 */
export function settledTrend(trend: readonly TrendPoint[], pending: ReadonlySet<string>): TrendPoint[] {
  const firstPending = new Map<string, number>();
  for (const p of trend)
    if (pending.has(p.checkpoint)) firstPending.set(p.series, Math.min(firstPending.get(p.series) ?? Number.POSITIVE_INFINITY, p.step));
  return trend.filter((p) => p.step <= (firstPending.get(p.series) ?? Number.POSITIVE_INFINITY));
}

/** Brings DIR's events files up to date with the trend; what happened to each run's file. */
export function writeTensorboard(
  dir: string,
  trend: readonly TrendPoint[],
  wallTime: (p: TrendPoint) => number,
): Map<string, EventsFileUpdate> {
  const updates = new Map<string, EventsFileUpdate>();
  for (const [run, content] of tensorboardRuns(trend, wallTime)) updates.set(run, updateEventsFile(join(dir, run, EVENTS_FILE), content));
  return updates;
}
