/** Rank and linear correlation with ties handled as the textbooks do, plus bootstrap intervals. */
import type { Rng } from '../util/rng.ts';

function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function checkPair(x: number[], y: number[]): void {
  if (x.length !== y.length) throw new RangeError(`paired samples differ in length (${x.length} vs ${y.length})`);
}

export function pearson(x: number[], y: number[]): number {
  checkPair(x, y);
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0,
    sxx = 0,
    syy = 0;
  for (let i = 0; i < x.length; i++) {
    const dx = x[i]! - mx,
      dy = y[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxx === 0 || syy === 0 ? NaN : sxy / Math.sqrt(sxx * syy);
}

/** Ranks from 1, ties sharing the mean of the ranks they span. */
export function averageRanks(xs: number[]): number[] {
  const order = xs.map((v, i) => ({ v, i })).sort((a, b) => a.v - b.v);
  const ranks = new Array<number>(xs.length);
  for (let start = 0; start < order.length; ) {
    let end = start;
    while (end + 1 < order.length && order[end + 1]!.v === order[start]!.v) end++;
    const rank = (start + end) / 2 + 1;
    for (let j = start; j <= end; j++) ranks[order[j]!.i] = rank;
    start = end + 1;
  }
  return ranks;
}

/** Spearman's rho: Pearson correlation of average ranks (correct with ties). */
export function spearman(x: number[], y: number[]): number {
  checkPair(x, y);
  return pearson(averageRanks(x), averageRanks(y));
}

/** Kendall's tau-b, which corrects for ties in either variable. */
export function kendallTauB(x: number[], y: number[]): number {
  checkPair(x, y);
  let concordant = 0,
    discordant = 0,
    tiesX = 0,
    tiesY = 0;
  for (let i = 0; i < x.length; i++) {
    for (let j = i + 1; j < x.length; j++) {
      const dx = Math.sign(x[i]! - x[j]!);
      const dy = Math.sign(y[i]! - y[j]!);
      if (dx === 0 && dy === 0) continue;
      if (dx === 0) tiesX++;
      else if (dy === 0) tiesY++;
      else if (dx === dy) concordant++;
      else discordant++;
    }
  }
  const denominator = Math.sqrt((concordant + discordant + tiesX) * (concordant + discordant + tiesY));
  return denominator === 0 ? NaN : (concordant - discordant) / denominator;
}

export interface Interval {
  estimate: number;
  low: number;
  high: number;
  resamples: number;
}

/**
 * Percentile bootstrap: resample units (items, or checkpoints) with replacement, recompute
 * the statistic, take the 2.5th and 97.5th percentiles. Resamples whose statistic is
 * undefined (e.g. all-tied ranks) are dropped and not counted.
 */
export function bootstrap<T>(units: T[], statistic: (sample: T[]) => number, rng: Rng, resamples = 2000): Interval {
  const estimate = statistic(units);
  const values: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const sample = Array.from({ length: units.length }, () => units[rng.int(units.length)]!);
    values.push(statistic(sample));
  }
  return percentileInterval(estimate, values);
}

/**
 * The 95% percentile interval of resampled statistics around `estimate`, for resampling
 * schemes `bootstrap` does not draw (e.g. tasks drawn once for two series). Undefined
 * values are dropped and not counted.
 */
export function percentileInterval(estimate: number, resampled: readonly number[]): Interval {
  const values = resampled.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (q: number) => values[Math.min(values.length - 1, Math.max(0, Math.floor(q * values.length)))] ?? NaN;
  return { estimate, low: at(0.025), high: at(0.975), resamples: values.length };
}
