/**
 * Each probe's order of the checkpoints whose quality is known (held-out code BPB,
 * measured when they were trained), set against that known order: the check a reader
 * makes before trusting a probe on checkpoints whose order nobody knows.
 */
import { kendallTauB } from '../stats/correlation.ts';
import { RANKING_ACCURACY_LABEL } from '../probes/mcq.ts';
import type { LadderRow } from '../schema/ladder-row.ts';
import { ladderMcqAccuracy } from './collect.ts';

export interface OrderCheck {
  metric: string;
  /** Best first; checkpoints the metric cannot tell apart share a group. */
  order: string[][];
  /** Kendall τ-b against the known order (1 = the same order, no ties). */
  kendall: number;
  /** The same strict order as the known one. */
  agrees: boolean;
  /** agrees; no signal (the probe cannot tell any of them apart, e.g. pass@1 0 for all); or differs. */
  verdict: 'agrees' | 'no signal' | 'differs';
}

export interface KnownOrder {
  /** Best first, by held-out code BPB. */
  known: Array<{ checkpoint: string; heldout_code_bpb: number }>;
  checks: OrderCheck[];
}

/** Higher is better for every metric here (BPB is negated). */
const METRICS: Array<{ metric: string; value: (r: LadderRow) => number | null | undefined }> = [
  { metric: 'BPB', value: (r) => -r.bpb },
  { metric: `MCQ ${RANKING_ACCURACY_LABEL}`, value: ladderMcqAccuracy },
  { metric: 'pass@1', value: (r) => r.pass_at?.['1'] },
  { metric: 'ASAP pass@1', value: (r) => r.asap?.pass_at_1 },
];

/** Undefined when fewer than two candidates (controls aside) have a known quality. */
export function knownOrder(rows: LadderRow[]): KnownOrder | undefined {
  const known = rows
    .filter((r) => !r.control && typeof r.heldout_code_bpb === 'number')
    .sort((a, b) => a.heldout_code_bpb! - b.heldout_code_bpb!);
  if (known.length < 2) return undefined;
  const quality = known.map((r) => -r.heldout_code_bpb!);
  const checks: OrderCheck[] = [];
  for (const { metric, value } of METRICS) {
    const values = known.map(value);
    if (values.some((v) => typeof v !== 'number' || !Number.isFinite(v))) continue; // not every known checkpoint reached this rung
    const scored = known.map((r, i) => ({ checkpoint: r.checkpoint, v: values[i] as number })).sort((a, b) => b.v - a.v);
    const order: string[][] = [];
    scored.forEach((s, i) => {
      if (i > 0 && s.v === scored[i - 1]!.v) order[order.length - 1]!.push(s.checkpoint);
      else order.push([s.checkpoint]);
    });
    const kendall = kendallTauB(values as number[], quality);
    const agrees = order.length === known.length && order.every((g, i) => g[0] === known[i]!.checkpoint);
    checks.push({ metric, order, kendall, agrees, verdict: agrees ? 'agrees' : order.length === 1 ? 'no signal' : 'differs' });
  }
  return { known: known.map((r) => ({ checkpoint: r.checkpoint, heldout_code_bpb: r.heldout_code_bpb! })), checks };
}
