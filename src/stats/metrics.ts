/**
 * Per-checkpoint probe metrics read back from the verbs' JSON output, each with its
 * per-item data so that item-level bootstrap can recompute it.
 */
import { meanPassAtK } from './pass-at-k.ts';

export interface MetricSeries {
  /** e.g. `bpb`, `mcq.acc_norm`, `passk.pass@8`. */
  name: string;
  /** Higher is better? (BPB is not.) */
  higherIsBetter: boolean;
  /** checkpoint → its per-item records. */
  items: Map<string, unknown[]>;
  /** The metric of a checkpoint from a (possibly resampled) list of its items. */
  aggregate: (items: unknown[]) => number;
}

interface BpbDoc {
  results: Array<{ checkpoint: string; items: Array<{ id: string; nats: number; bytes: number }> }>;
}
interface McqDoc {
  results: Array<{
    checkpoint: string;
    style: string;
    items: Array<{ id: string; correct: boolean; correct_norm: boolean | null; correct_pmi: boolean | null }>;
  }>;
}
interface PasskDoc {
  results: Array<{ checkpoint: string; n: number; pass_at: Record<string, number>; items: Array<{ id: string; n: number; c: number }> }>;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Recognises a document printed by `probe bpb|mcq|passk --json` and returns its metrics. */
export function metricsFromDocument(doc: unknown): MetricSeries[] {
  const results = (doc as { results?: Array<Record<string, unknown>> })?.results;
  if (!Array.isArray(results) || results.length === 0) return [];
  const first = results[0]!;
  const byCheckpoint = <T>(pick: (r: Record<string, unknown>) => T[]) =>
    new Map(results.map((r) => [String(r.checkpoint), pick(r) as unknown[]]));
  if ('bpb' in first) {
    const items = byCheckpoint((r) => (r as unknown as BpbDoc['results'][number]).items);
    return [
      {
        name: 'bpb',
        higherIsBetter: false,
        items,
        aggregate: (its) => {
          const list = its as BpbDoc['results'][number]['items'];
          return list.reduce((a, i) => a + i.nats, 0) / (Math.LN2 * list.reduce((a, i) => a + i.bytes, 0));
        },
      },
    ];
  }
  if ('acc' in first) {
    const style = String(first.style ?? 'likelihood');
    const items = byCheckpoint((r) => (r as unknown as McqDoc['results'][number]).items);
    const rate = (field: 'correct' | 'correct_norm' | 'correct_pmi') => (its: unknown[]) =>
      mean((its as McqDoc['results'][number]['items']).map((i) => (i[field] ? 1 : 0)));
    const out: MetricSeries[] = [
      { name: `mcq.${style === 'letter' ? 'letter.' : ''}acc`, higherIsBetter: true, items, aggregate: rate('correct') },
    ];
    if (style !== 'letter') {
      out.push({ name: 'mcq.acc_norm', higherIsBetter: true, items, aggregate: rate('correct_norm') });
      out.push({ name: 'mcq.acc_pmi', higherIsBetter: true, items, aggregate: rate('correct_pmi') });
    }
    return out;
  }
  if ('pass_at' in first) {
    const items = byCheckpoint((r) => (r as unknown as PasskDoc['results'][number]).items);
    // ASAP episodes of an environment that names itself in its results (`probe asap --env research|terminal`)
    // are pass@k over its questions or tasks, named apart from prefix pass@K by that name.
    const family = typeof first.env === 'string' ? first.env : 'passk';
    return Object.keys(first.pass_at as object).map((k) => ({
      name: `${family}.pass@${k}`,
      higherIsBetter: true,
      items,
      aggregate: (its: unknown[]) => meanPassAtK(its as Array<{ n: number; c: number }>, Number(k)),
    }));
  }
  return [];
}
