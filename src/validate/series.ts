/**
 * What the study compares: each probe's value per checkpoint, and each ground truth's
 * (ASAP pass@k and ASAP's graded behaviour), as per-unit records with the function that
 * aggregates them — so the value in the table, and every bootstrap resample of it, are
 * computed by one function from the same records. A unit is a task (probe items and ASAP
 * instances of one task are resampled together) or, for plain code, a file.
 */
import { summarizeBehaviour, type BehaviourSummary, type RunBehaviour } from '../swe/behaviour.ts';
import type { AsapResult } from '../swe/run.ts';
import type { BpbItem, BpbResult } from '../probes/bpb.ts';
import type { McqItem, McqResult } from '../probes/mcq.ts';
import type { PasskItem, PasskResult } from '../probes/passk.ts';
import { meanPassAtK } from '../stats/pass-at-k.ts';
import type { MetricSeries } from '../stats/metrics.ts';

export interface StudySeries extends MetricSeries {
  kind: 'probe' | 'truth';
  /** The unit a record belongs to: its task, or its file (plain code). */
  unitOf: (record: unknown) => string;
  unitKind: 'task' | 'file';
}

/** ASAP's graded behaviour that the study uses as ground truth: rates where higher means more agent-like. */
export const BEHAVIOUR_TRUTHS = [
  'parsable_turns',
  'valid_tool_calls',
  'relevant_file_access',
  'autonomous_edits',
  'active_testing',
  'applicable_patch',
  'explicit_submission',
] as const satisfies ReadonlyArray<keyof BehaviourSummary>;

/** One ASAP instance's records: its pass counts and the behaviour of each of its runs. */
export interface AsapInstanceRecord {
  instance: string;
  n: number;
  c: number;
  behaviour: RunBehaviour[];
}

const byCheckpoint = <R extends { checkpoint: string }, T>(results: readonly R[], pick: (r: R) => T[]) =>
  new Map(results.map((r) => [r.checkpoint, pick(r) as unknown[]]));
const rate = (flags: boolean[]) => flags.reduce((a, f) => a + (f ? 1 : 0), 0) / flags.length;

export function bpbAggregate(items: unknown[]): number {
  const list = items as BpbItem[];
  return list.reduce((a, i) => a + i.nats, 0) / (Math.LN2 * list.reduce((a, i) => a + i.bytes, 0));
}

export interface RungResults {
  code_bpb: BpbResult[];
  bpb: BpbResult[];
  mcq: McqResult[];
  passk: PasskResult[];
  /** The pass@k values pass@K reports (1 and its n). */
  passkKs: number[];
}

/** The probes' series; `taskOfItem` maps a probe item id to its task (MCQ items do not carry it). */
export function probeSeries(r: RungResults, taskOfItem: (id: string) => string): StudySeries[] {
  const taskUnit = (record: unknown) => (record as { task: string }).task;
  const series: StudySeries[] = [
    {
      name: 'code_bpb',
      kind: 'probe',
      higherIsBetter: false,
      unitKind: 'file',
      unitOf: taskUnit,
      items: byCheckpoint(r.code_bpb, (x) => x.items),
      aggregate: bpbAggregate,
    },
    {
      name: 'bpb',
      kind: 'probe',
      higherIsBetter: false,
      unitKind: 'task',
      unitOf: taskUnit,
      items: byCheckpoint(r.bpb, (x) => x.items),
      aggregate: bpbAggregate,
    },
  ];
  const mcqItems = byCheckpoint(r.mcq, (x) => x.items);
  const mcqUnit = (record: unknown) => taskOfItem((record as McqItem).id);
  for (const [name, field] of [
    ['mcq.acc', 'correct'],
    ['mcq.acc_norm', 'correct_norm'],
    ['mcq.acc_pmi', 'correct_pmi'],
  ] as const) {
    series.push({
      name,
      kind: 'probe',
      higherIsBetter: true,
      unitKind: 'task',
      unitOf: mcqUnit,
      items: mcqItems,
      aggregate: (its) => rate((its as McqItem[]).map((i) => Boolean(i[field]))),
    });
  }
  const passkItems = byCheckpoint(r.passk, (x) => x.items);
  for (const k of r.passkKs) {
    series.push({
      name: `passk.pass@${k}`,
      kind: 'probe',
      higherIsBetter: true,
      unitKind: 'task',
      unitOf: taskUnit,
      items: passkItems,
      aggregate: (its) => meanPassAtK(its as PasskItem[], k),
    });
  }
  return series;
}

/** The ground truths' series: ASAP pass@k for each k given, and each behaviour rate. */
export function truthSeries(records: ReadonlyMap<string, AsapInstanceRecord[]>, ks: number[]): StudySeries[] {
  const items = new Map([...records].map(([c, r]) => [c, r as unknown[]]));
  const unitOf = (record: unknown) => (record as AsapInstanceRecord).instance;
  const series: StudySeries[] = ks.map((k) => ({
    name: `asap.pass@${k}`,
    kind: 'truth',
    higherIsBetter: true,
    unitKind: 'task',
    unitOf,
    items,
    aggregate: (its: unknown[]) => meanPassAtK(its as AsapInstanceRecord[], k),
  }));
  for (const field of BEHAVIOUR_TRUTHS) {
    series.push({
      name: `asap.${field}`,
      kind: 'truth',
      higherIsBetter: true,
      unitKind: 'task',
      unitOf,
      items,
      aggregate: (its) => summarizeBehaviour((its as AsapInstanceRecord[]).flatMap((i) => i.behaviour))[field],
    });
  }
  return series;
}

/** An ASAP result's instances with the behaviour of each saved run (read from the run's episodes). */
export function asapRecords(result: AsapResult, behaviourOf: (instance: string, run: number) => RunBehaviour): AsapInstanceRecord[] {
  return result.items.map((item) => ({
    instance: item.instance,
    n: item.n,
    c: item.c,
    behaviour: item.runs.map((r) => behaviourOf(item.instance, r.run)),
  }));
}

/** A series' value for one checkpoint (NaN where it has no records). */
export function seriesValue(series: StudySeries, checkpoint: string): number {
  const records = series.items.get(checkpoint);
  return records?.length ? series.aggregate(records) : NaN;
}
