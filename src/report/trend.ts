/**
 * The trend of a watched training run: each probe against training step, one point per
 * checkpoint that has the probe, with a 95% bootstrap interval over items where the probe
 * has items, and the points where a probe and the baseline (general code BPB) disagree —
 * between two checkpoints of one training run (one improves, the other worsens) or between
 * training runs at the same step (they order the runs the other way round).
 */
import type { AsapResult } from '../swe/run.ts';
import type { BpbResult } from '../probes/bpb.ts';
import { rankingAccuracy, type McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import { bootstrap } from '../stats/correlation.ts';
import { passAtK } from '../stats/pass-at-k.ts';
import { createRng } from '../util/rng.ts';

export const TREND_PROBES = [
  { key: 'code_bpb', label: 'general code BPB (baseline)', higherIsBetter: false, share: false },
  { key: 'bpb', label: 'Decisive-Action BPB', higherIsBetter: false, share: false },
  { key: 'mcq', label: 'Patch MCQ (acc_norm)', higherIsBetter: true, share: true },
  { key: 'passk', label: 'prefix pass@1', higherIsBetter: true, share: true },
  { key: 'asap', label: 'ASAP pass@1', higherIsBetter: true, share: true },
  { key: 'asap_valid_calls', label: 'ASAP valid tool calls', higherIsBetter: true, share: true },
] as const;

export type TrendProbe = (typeof TREND_PROBES)[number]['key'];
export const BASELINE: TrendProbe = 'code_bpb';

export interface TrendValue {
  value: number;
  /** The 95% percentile-bootstrap interval over the probe's items; null where it has none. */
  low: number | null;
  high: number | null;
}

/** What a watch recorded of one checkpoint. */
export interface WatchedScores {
  checkpoint: string;
  /** The entry's name in the watched directory (what the trend labels a point with). */
  label: string;
  series: string;
  step: number;
  code_bpb: BpbResult | null;
  bpb: BpbResult | null;
  mcq: McqResult | null;
  passk: PasskResult | null;
  asap: AsapResult | null;
}

export interface TrendPoint {
  checkpoint: string;
  label: string;
  series: string;
  step: number;
  values: Partial<Record<TrendProbe, TrendValue>>;
  /** Per probe, why this point disagrees with the baseline (absent: it does not). */
  disagreements: Partial<Record<TrendProbe, string>>;
}

const RESAMPLES = 1000;

function interval<T>(units: T[], statistic: (sample: T[]) => number, seed: string): TrendValue {
  const value = statistic(units);
  if (units.length < 2) return { value, low: null, high: null };
  const { low, high } = bootstrap(units, statistic, createRng('trend', seed), RESAMPLES);
  return { value, low, high };
}

const bitsPerByte = (items: BpbResult['items']) =>
  items.reduce((a, i) => a + i.nats, 0) /
  (Math.LN2 *
    Math.max(
      1,
      items.reduce((a, i) => a + i.bytes, 0),
    ));
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

function valuesOf(s: WatchedScores): TrendPoint['values'] {
  const all = allValuesOf(s);
  // A value JSON cannot hold (an infinite BPB: an impossible token) is no point on a chart.
  for (const key of Object.keys(all) as TrendProbe[]) {
    const v = all[key]!;
    if (!Number.isFinite(v.value)) delete all[key];
    else if (!Number.isFinite(v.low ?? 0) || !Number.isFinite(v.high ?? 0)) all[key] = { value: v.value, low: null, high: null };
  }
  return all;
}

function allValuesOf(s: WatchedScores): TrendPoint['values'] {
  const v: TrendPoint['values'] = {};
  const seed = (probe: string) => `${s.checkpoint}\0${probe}`;
  if (s.code_bpb?.items.length) v.code_bpb = interval(s.code_bpb.items, bitsPerByte, seed('code_bpb'));
  if (s.bpb?.items.length) v.bpb = interval(s.bpb.items, bitsPerByte, seed('bpb'));
  if (s.mcq?.items.length) {
    const norm = typeof s.mcq.acc_norm === 'number';
    const correct = s.mcq.items.map((i) => (norm ? i.correct_norm : i.correct) === true);
    v.mcq = { ...interval(correct, (xs) => mean(xs.map(Number)), seed('mcq')), value: rankingAccuracy(s.mcq) };
  }
  if (s.passk?.items.length) v.passk = interval(s.passk.items, (xs) => mean(xs.map((i) => passAtK(i.n, i.c, 1))), seed('passk'));
  if (s.asap?.items.length) {
    v.asap = interval(s.asap.items, (xs) => mean(xs.map((i) => (i.n ? i.c / i.n : 0))), seed('asap'));
    v.asap_valid_calls = { value: s.asap.behaviour.valid_tool_calls, low: null, high: null };
  }
  return v;
}

const PROBE = new Map(TREND_PROBES.map((p) => [p.key as TrendProbe, p]));

/** How a value reads in a sentence: bits per byte to 3 places, shares as percentages. */
export function formatTrendValue(probe: TrendProbe, value: number): string {
  return PROBE.get(probe)!.share ? `${(100 * value).toFixed(1)}%` : value.toFixed(3);
}

/** +1 where `b` is better than `a` for the probe, -1 where worse, 0 where equal. */
function direction(probe: TrendProbe, a: number, b: number): number {
  if (a === b) return 0;
  return b > a === PROBE.get(probe)!.higherIsBetter ? 1 : -1;
}

/** The trend: points in (series, step) order, with disagreements with the baseline marked. */
export function trendPoints(scores: readonly WatchedScores[]): TrendPoint[] {
  const points: TrendPoint[] = [...scores]
    .sort((a, b) => a.series.localeCompare(b.series) || a.step - b.step || a.label.localeCompare(b.label))
    .map((s) => ({ checkpoint: s.checkpoint, label: s.label, series: s.series, step: s.step, values: valuesOf(s), disagreements: {} }));
  const name = (p: TrendProbe) => PROBE.get(p)!.label.replace(' (baseline)', '');
  for (const probe of TREND_PROBES.map((p) => p.key).filter((p) => p !== BASELINE)) {
    // Along a training run: from the previous point that has both.
    const bySeries = new Map<string, TrendPoint[]>();
    for (const p of points) if (p.values[probe] && p.values[BASELINE]) bySeries.set(p.series, [...(bySeries.get(p.series) ?? []), p]);
    for (const run of bySeries.values())
      for (let i = 1; i < run.length; i++) {
        const [a, b] = [run[i - 1]!, run[i]!];
        const base = direction(BASELINE, a.values[BASELINE]!.value, b.values[BASELINE]!.value);
        const own = direction(probe, a.values[probe]!.value, b.values[probe]!.value);
        if (base !== 0 && own !== 0 && base !== own)
          b.disagreements[probe] =
            `from ${a.label} to ${b.label} ${name(BASELINE)} ${base > 0 ? 'improved' : 'worsened'} (${formatTrendValue(BASELINE, a.values[BASELINE]!.value)} → ${formatTrendValue(BASELINE, b.values[BASELINE]!.value)}) while ${name(probe)} ${own > 0 ? 'improved' : 'worsened'} (${formatTrendValue(probe, a.values[probe]!.value)} → ${formatTrendValue(probe, b.values[probe]!.value)})`;
      }
    // Across training runs at one step: the two order the runs differently.
    const atStep = new Map<number, TrendPoint[]>();
    for (const p of points) if (p.values[probe] && p.values[BASELINE]) atStep.set(p.step, [...(atStep.get(p.step) ?? []), p]);
    for (const [step, same] of atStep)
      for (let i = 0; i < same.length; i++)
        for (let j = i + 1; j < same.length; j++) {
          const [a, b] = [same[i]!, same[j]!];
          if (a.series === b.series) continue;
          const base = direction(BASELINE, a.values[BASELINE]!.value, b.values[BASELINE]!.value);
          const own = direction(probe, a.values[probe]!.value, b.values[probe]!.value);
          if (base === 0 || own === 0 || base === own) continue;
          const [baseBest, probeBest] = base > 0 ? [b, a] : [a, b];
          const note = `at step ${step} ${name(BASELINE)} ranks ${baseBest.series} first, ${name(probe)} ranks ${probeBest.series} first`;
          for (const p of [a, b]) p.disagreements[probe] ??= note;
        }
  }
  return points;
}
