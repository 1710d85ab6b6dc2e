/**
 * The validation study: every rung on every checkpoint (no shortlist) — general code BPB,
 * Decisive-Action BPB, Patch MCQ, prefix pass@K — then ASAP episodes on every checkpoint,
 * and each probe set against each ground truth. Each rung writes its items to the run
 * directory as they finish (the same logs `probe screen` writes), ASAP its episodes, and
 * each rung × checkpoint its cost when it ends: a killed study resumes where it stopped.
 */
import { join, resolve } from 'node:path';
import type { AsapResult } from '../swe/run.ts';
import { AsapStore } from '../swe/store.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { ProbeError } from '../errors.ts';
import type { BpbResult } from '../probes/bpb.ts';
import { codePieces } from '../probes/code-text.ts';
import type { ItemHooks } from '../probes/memo.ts';
import type { McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import type { SampleProbe } from '../schema/sample-results.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { RunDir } from '../store/run-dir.ts';
import { forEachCheckpoint, itemHooks, runLoopOptions, type Failure, type ScoringRun } from '../pipeline/checkpoint-loop.ts';
import { asapTasksOf, checkReferences, runAsapRung } from '../pipeline/rungs/asap.ts';
import { scoreBpbAndMcq, scoreCodeBpb } from '../pipeline/rungs/cheap.ts';
import { passkRunItems, passkSandboxes, scorePasskRung } from '../pipeline/rungs/passk.ts';
import type { RungScorer } from '../pipeline/rungs/scorer.ts';
import { asapProfileOf, type CodeBpbSettings, RUNG_DEFAULTS, type RungSettings, rungRecord } from '../pipeline/rungs/settings.ts';
import { correlatePair, ranking, type Correlation } from './correlate.ts';
import { countingBackend } from './counting-backend.ts';
import { asapRecords, probeSeries, truthSeries, seriesValue, type AsapInstanceRecord, type StudySeries } from './series.ts';
import { passAtKs } from '../protocol.ts';

export interface StudySettings extends RungSettings, CodeBpbSettings {
  resamples: number;
  /** Correlate controls (checkpoints that have seen the probes) too. */
  includeControls?: boolean | undefined;
}

/** `probe validate`'s defaults: the rungs', but 4 ASAP runs per instance for every checkpoint (the ground truth), and 1000 bootstrap resamples. */
export const STUDY_DEFAULTS = { ...RUNG_DEFAULTS, asapRuns: 4, resamples: 1000 } as const satisfies Partial<StudySettings>;

/** What decides a study's results, for run.json (a resumed study must match it). */
export function studyConfig(s: StudySettings): Record<string, unknown> {
  return {
    ...rungRecord(s, [
      'tasks',
      'reference',
      'code',
      'n',
      'passk_max_tokens',
      'asap_runs',
      'asap_max_steps',
      'asap_max_tokens',
      'asap_instances',
    ]),
    // Recorded only when not the default, so studies run before the option resume unchanged.
    ...(asapProfileOf(s) !== 'bash' ? { asap_profile: asapProfileOf(s) } : {}),
  };
}

/** What one rung cost on one checkpoint. Wall time is of the invocation that computed it (`items_reused` > 0: a resumed part only). */
export interface RungCost {
  rung: string;
  checkpoint: string;
  wall_ms: number;
  tokens_scored: number;
  tokens_sampled: number;
  items: number;
  items_reused: number;
}

export interface CheckpointRow {
  checkpoint: string;
  control: boolean;
  heldout_code_bpb: number | null;
  probes: Record<string, number | null>;
  truths: Record<string, number | null>;
}

/** `ranking`: best first, tied checkpoints in one group. */
export interface SeriesSummary {
  name: string;
  higher_is_better: boolean;
  unit: 'task' | 'file';
  ranking: string[][];
}

export interface StudyOutcome {
  rows: CheckpointRow[];
  probes: SeriesSummary[];
  truths: SeriesSummary[];
  correlations: Correlation[];
  /** Checkpoints the correlations are over (controls left out unless asked for). */
  correlated: string[];
  costs: RungCost[];
  rungs: { code_bpb: BpbResult[]; bpb: BpbResult[]; mcq: McqResult[]; passk: PasskResult[]; asap: AsapResult[] };
  code: { path: string; files: number; pieces: number; bytes: number };
  asap_out: string | null;
  failures: Failure[];
}

/** A study always has a run directory: its item logs and costs are what a rerun resumes from. */
export type StudyRun = ScoringRun & { dir: RunDir };

/**
 * The cost to report for a rung × checkpoint: the one recorded when it ran, where this
 * invocation computed nothing new (a resumed study), else this invocation's, recorded.
 */
function keptCost(run: StudyRun, fresh: RungCost, computed: number): RungCost {
  const costs = run.dir.memo<RungCost>('costs', fresh.checkpoint);
  const known = costs.get(fresh.rung);
  if (known && computed === 0) return known;
  costs.put(fresh.rung, fresh);
  return fresh;
}

/** The study's scorer: each rung on the checkpoint with its tokens counted and its time taken, its cost added to `costs`. */
function measuringScorer(
  run: StudyRun,
  ckpt: string,
  backend: CompletionBackend,
  tick: (reused?: boolean) => void,
  costs: RungCost[],
): RungScorer {
  return async <R, T>(rung: SampleProbe, score: (backend: CompletionBackend, hooks: ItemHooks<T>) => Promise<R>) => {
    let computed = 0,
      reused = 0;
    const base = itemHooks<T>(run.dir, rung, ckpt, (wasReused) => {
      if (wasReused) reused++;
      tick(wasReused);
    });
    // New work is what gets saved (an item a rung skips, like an MCQ item without distractors, is neither).
    const memo = base.memo!;
    const hooks: ItemHooks<T> = {
      ...base,
      memo: {
        get: memo.get,
        put: (id, value) => {
          computed++;
          memo.put(id, value);
        },
      },
    };
    const counting = countingBackend(backend);
    const started = performance.now();
    const result = await score(counting.backend, hooks);
    const fresh: RungCost = {
      rung,
      checkpoint: ckpt,
      wall_ms: performance.now() - started,
      tokens_scored: counting.count.scored,
      tokens_sampled: counting.count.sampled,
      items: computed + reused,
      items_reused: reused,
    };
    costs.push(keptCost(run, fresh, computed));
    return result;
  };
}

/**
 * The ground truth: ASAP episodes on every checkpoint, on the tasks the probes come from,
 * with each run's graded behaviour read back from its saved episode (so a report can be
 * recomputed from the run directory) and what the episodes cost.
 */
async function groundTruth(run: StudyRun, s: StudySettings, asapTasks: LoadedTask[]) {
  const out = join(run.dir.dir, 'asap');
  const store = new AsapStore(out);
  const finishedBefore = (ckpt: string) =>
    asapTasks.reduce(
      (a, t) => a + Array.from({ length: s.asapRuns }, (_, r) => store.readEpisode(ckpt, t.instance_id, r).end).filter(Boolean).length,
      0,
    );
  const reusedOf = new Map(run.checkpoints.map(({ name }) => [name, finishedBefore(name)]));
  const asap = await runAsapRung(run.checkpoints, asapTasks, s, run, out);
  const records = new Map<string, AsapInstanceRecord[]>();
  const costs: RungCost[] = [];
  for (const r of asap.results) {
    const episode = (instance: string, runIndex: number) => {
      const saved = store.readEpisode(r.checkpoint, instance, runIndex);
      if (!saved.end) throw new ProbeError(`ASAP episode ${instance} run ${runIndex} of ${r.checkpoint} has no end in ${out}`);
      return saved;
    };
    records.set(
      r.checkpoint,
      asapRecords(r, (instance, runIndex) => episode(instance, runIndex).end!.behaviour),
    );
    const episodes = r.items.flatMap((item) => item.runs.map((x) => episode(item.instance, x.run)));
    const reused = reusedOf.get(r.checkpoint) ?? 0;
    costs.push(
      keptCost(
        run,
        {
          rung: 'asap',
          checkpoint: r.checkpoint,
          wall_ms: r.timing.wall_ms,
          tokens_scored: 0,
          tokens_sampled: episodes.reduce((a, e) => a + e.steps.reduce((b, step) => b + step.tokens, 0), 0),
          items: episodes.length,
          items_reused: reused,
        },
        episodes.length - reused,
      ),
    );
  }
  return { results: asap.results, records, costs, failures: asap.failures, out: asap.out as string | null };
}

export async function runStudy(run: StudyRun, s: StudySettings): Promise<StudyOutcome> {
  const { items, checkpoints } = run;
  // Inputs of the later rungs are checked before the first rung's work.
  const code = codePieces(s.code);
  const asapTasks = asapTasksOf(items, s);
  checkReferences(s, asapTasks);
  const tasks = new Map(s.tasks.map((t) => [t.instance_id, t]));
  const passkRun = { items: passkRunItems(items, s, tasks), tasks, pools: passkSandboxes() };
  const ks = passAtKs(s.n);
  const costs: RungCost[] = [];
  // Two passes, as `probe screen` makes them: a checkpoint whose sampling fails keeps its scores.
  const scored = await forEachCheckpoint(
    checkpoints,
    runLoopOptions(run, 'code bpb, bpb, mcq', code.length + 2 * items.length),
    async (ckpt, backend, tick) => {
      // A checkpoint's costs are kept once all three rungs are scored: one that fails part-way has none.
      const its: RungCost[] = [];
      const scorer = measuringScorer(run, ckpt, backend, tick, its);
      const code_bpb = await scoreCodeBpb(ckpt, code, scorer);
      const { bpb, mcq } = await scoreBpbAndMcq(ckpt, items, s.seed, scorer);
      costs.push(...its);
      return { code_bpb, bpb, mcq };
    },
  );
  let sampled;
  try {
    sampled = await forEachCheckpoint(checkpoints, runLoopOptions(run, 'pass@k', passkRun.items.length), (ckpt, backend, tick) =>
      scorePasskRung(ckpt, passkRun, s, measuringScorer(run, ckpt, backend, tick, costs)),
    );
  } finally {
    await passkRun.pools.close();
  }
  const failures: Failure[] = [...scored.failures, ...sampled.failures];
  const rungs = {
    code_bpb: scored.results.map((r) => r.code_bpb),
    bpb: scored.results.map((r) => r.bpb),
    mcq: scored.results.map((r) => r.mcq),
    passk: sampled.results,
    asap: [] as AsapResult[],
  };

  const truth =
    s.asapRuns > 0 && asapTasks.length > 0
      ? await groundTruth(run, s, asapTasks)
      : { results: [], records: new Map<string, AsapInstanceRecord[]>(), costs: [], failures: [], out: null };
  rungs.asap = truth.results;
  costs.push(...truth.costs);
  failures.push(...truth.failures);

  const taskOfItem = new Map(items.map((i) => [i.id, i.task]));
  const probes = probeSeries({ ...rungs, passkKs: [...new Set([1, ks.at(-1)!])] }, (id) => taskOfItem.get(id) ?? id);
  const truthKs = [...new Set([1, passAtKs(s.asapRuns).at(-1) ?? 1])];
  const truths = s.asapRuns > 0 ? truthSeries(truth.records, truthKs) : [];
  const correlated = checkpoints.filter((c) => s.includeControls || !c.facts.control).map((c) => c.name);
  const correlations = probes.flatMap((p) =>
    truths.map((t) => correlatePair(p, t, correlated, s.seed, s.resamples)).filter((c): c is Correlation => c !== undefined),
  );
  const value = (series: StudySeries, c: string) => {
    const v = seriesValue(series, c);
    return Number.isFinite(v) ? v : null;
  };
  const rows: CheckpointRow[] = checkpoints.map(({ name: c, facts }) => ({
    checkpoint: c,
    ...facts,
    probes: Object.fromEntries(probes.map((p) => [p.name, value(p, c)])),
    truths: Object.fromEntries(truths.map((t) => [t.name, value(t, c)])),
  }));
  const summary = (series: StudySeries): SeriesSummary => ({
    name: series.name,
    higher_is_better: series.higherIsBetter,
    unit: series.unitKind,
    ranking: ranking(series, correlated),
  });
  return {
    rows,
    probes: probes.map(summary),
    truths: truths.map(summary),
    correlations,
    correlated,
    costs,
    rungs,
    asap_out: truth.out,
    failures,
    code: {
      path: resolve(s.code),
      files: new Set(code.map((p) => p.task)).size,
      pieces: code.length,
      bytes: code.reduce((a, p) => a + Buffer.byteLength(p.gold), 0),
    },
  };
}
