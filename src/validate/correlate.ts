/**
 * Each probe against each ground truth over the checkpoints: Spearman ρ and Kendall τ-b
 * of the values oriented so that +1 means "ranks the checkpoints as the ground truth
 * does" (a lower BPB counts as better), with percentile-bootstrap 95% intervals two ways:
 * over checkpoints (as `probe correlate`), and over tasks — the same drawn tasks for the
 * probe and the ground truth, both recomputed from their records (plain-code files are
 * drawn alongside), which is where a study on few tasks is uncertain.
 */
import { bootstrap, kendallTauB, percentileInterval, spearman, type Interval } from '../stats/correlation.ts';
import { createRng, type Rng } from '../util/rng.ts';
import { seriesValue, type StudySeries } from './series.ts';

export interface Correlation {
  probe: string;
  truth: string;
  checkpoints: number;
  spearman: number;
  kendall: number;
  spearman_ci_checkpoints: Interval;
  spearman_ci_tasks: Interval;
  kendall_ci_tasks: Interval;
}

/** A series' value oriented so that higher is better. */
export function oriented(series: StudySeries, checkpoint: string): number {
  const v = seriesValue(series, checkpoint);
  return series.higherIsBetter ? v : -v;
}

/** Best first by this series, checkpoints it ties in one group; checkpoints without a value last, as one group. */
export function ranking(series: StudySeries, checkpoints: readonly string[]): string[][] {
  const score = (c: string) => {
    const v = oriented(series, c);
    return Number.isNaN(v) ? -Infinity : v;
  };
  const groups: string[][] = [];
  for (const c of [...checkpoints].sort((a, b) => score(b) - score(a))) {
    const last = groups.at(-1);
    if (last && score(last[0]!) === score(c)) last.push(c);
    else groups.push([c]);
  }
  return groups;
}

/** A series recomputed on drawn units: each drawn unit contributes all its records, once per draw. */
function resampled(series: StudySeries, checkpoint: string, draw: ReadonlyMap<string, number>): number {
  const records = series.items.get(checkpoint) ?? [];
  const picked = records.flatMap((r) => Array.from({ length: draw.get(series.unitOf(r)) ?? 0 }, () => r));
  const v = picked.length ? series.aggregate(picked) : NaN;
  return series.higherIsBetter ? v : -v;
}

function drawUnits(units: readonly string[], rng: Rng): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < units.length; i++) {
    const u = units[rng.int(units.length)]!;
    counts.set(u, (counts.get(u) ?? 0) + 1);
  }
  return counts;
}

function unitsOf(series: StudySeries, checkpoints: readonly string[]): string[] {
  return [...new Set(checkpoints.flatMap((c) => (series.items.get(c) ?? []).map((r) => series.unitOf(r))))].sort();
}

/**
 * Spearman's ρ of x against y, with its percentile-bootstrap interval over checkpoints: the
 * pairs are drawn together. One draw for the study and for `probe correlate`
 * (metric-correlations.ts), so their intervals over checkpoints are the same statistic.
 */
export function spearmanOverCheckpoints(x: readonly number[], y: readonly number[], rng: Rng, resamples: number): Interval {
  return bootstrap(
    x.map((_, i) => i),
    (idx) =>
      spearman(
        idx.map((i) => x[i]!),
        idx.map((i) => y[i]!),
      ),
    rng,
    resamples,
  );
}

export function correlatePair(
  probe: StudySeries,
  truth: StudySeries,
  candidates: readonly string[],
  seed: number,
  resamples: number,
): Correlation | undefined {
  const checkpoints = candidates.filter((c) => Number.isFinite(seriesValue(probe, c)) && Number.isFinite(seriesValue(truth, c)));
  if (checkpoints.length < 2) return undefined;
  const x = checkpoints.map((c) => oriented(probe, c));
  const y = checkpoints.map((c) => oriented(truth, c));
  const overCheckpoints = spearmanOverCheckpoints(x, y, createRng('validate', seed, probe.name, truth.name, 'ckpt'), resamples);
  // One draw of tasks serves both series (and, where the probe's units are files, a draw of files serves the probe).
  const tasks = [...new Set([...(probe.unitKind === 'task' ? unitsOf(probe, checkpoints) : []), ...unitsOf(truth, checkpoints)])].sort();
  const files = probe.unitKind === 'file' ? unitsOf(probe, checkpoints) : [];
  // The same draws serve Spearman and Kendall: their intervals describe one uncertainty.
  const rng = createRng('validate', seed, probe.name, truth.name, 'tasks');
  const rhos: number[] = [];
  const taus: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const taskDraw = drawUnits(tasks, rng);
    const probeDraw = probe.unitKind === 'file' ? drawUnits(files, rng) : taskDraw;
    const xs = checkpoints.map((c) => resampled(probe, c, probeDraw));
    const ys = checkpoints.map((c) => resampled(truth, c, taskDraw));
    // A draw that leaves a checkpoint without a value (no drawn task has its records) is no draw: dropped, not counted.
    const complete = [...xs, ...ys].every(Number.isFinite);
    rhos.push(complete ? spearman(xs, ys) : NaN);
    taus.push(complete ? kendallTauB(xs, ys) : NaN);
  }
  const rho = spearman(x, y);
  const tau = kendallTauB(x, y);
  return {
    probe: probe.name,
    truth: truth.name,
    checkpoints: checkpoints.length,
    spearman: rho,
    kendall: tau,
    spearman_ci_checkpoints: overCheckpoints,
    spearman_ci_tasks: percentileInterval(rho, rhos),
    kendall_ci_tasks: percentileInterval(tau, taus),
  };
}
