/**
 * The validation study: every rung on every checkpoint (no shortlist) — general code BPB,
 * Decisive-Action BPB, Patch MCQ, prefix pass@K — then ASAP episodes on every checkpoint,
 * and each probe set against each ground truth. Each rung writes its items to the run
 * directory as they finish (the same logs `probe screen` writes), ASAP its episodes, and
 * each rung × checkpoint its cost when it ends: a killed study resumes where it stopped.
 */
import { join, resolve } from 'node:path';
import { referenceFiles } from '../swe/prepare.ts';
import type { AsapResult } from '../swe/run.ts';
import { AsapStore } from '../swe/store.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { ProbeError } from '../errors.ts';
import { scoreBpb, type BpbItem, type BpbResult } from '../probes/bpb.ts';
import type { ItemHooks } from '../probes/memo.ts';
import { scoreMcq, type McqItem, type McqResult } from '../probes/mcq.ts';
import { scorePassk, type PasskItem, type PasskResult } from '../probes/passk.ts';
import { restoreProbeState, taskForItem } from '../probes/restore.ts';
import { openSandbox } from '../sandbox/open.ts';
import { TaskPools } from '../sandbox/pool.ts';
import type { SampleProbe } from '../schema/sample-results.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { RunDir } from '../store/run-dir.ts';
import { asapProtocolSettings, runAsapOverCheckpoints } from '../pipeline/asap.ts';
import { forEachCheckpoint, itemHooks, type Failure, type ScoringRun } from '../pipeline/checkpoint-loop.ts';
import { codePieces } from '../probes/code-text.ts';
import { correlatePair, ranking, type Correlation } from './correlate.ts';
import { countingBackend } from './counting-backend.ts';
import { asapRecords, probeSeries, truthSeries, seriesValue, type AsapInstanceRecord, type StudySeries } from './series.ts';
import type { ToolProfile } from '../swe/profiles.ts';
import { ACTION_MAX_TOKENS, ASAP_PROTOCOL, passAtKs, SAMPLING } from '../protocol.ts';

export interface StudySettings {
  tasks: LoadedTask[];
  tasksPath: string;
  reference: string;
  /** A file or directory of plain held-out code for general code BPB. */
  code: string;
  n: number;
  seed: number;
  passkMaxTokens?: number | undefined;
  asapRuns: number;
  asapMaxSteps: number;
  asapMaxTokens?: number | undefined;
  /** Only the first N instances get ASAP episodes (default: all the probes' tasks). */
  asapInstances?: number | undefined;
  /** Tools the ASAP episodes may use (default bash, the protocol's; editor where the checkpoints' transcripts used str_replace_editor). */
  asapProfile?: ToolProfile | undefined;
  concurrency: number;
  resamples: number;
  /** Correlate controls (checkpoints that have seen the probes) too. */
  includeControls?: boolean | undefined;
}

/** `probe validate`'s defaults: the screen's pass@K, 4 ASAP runs per instance for every checkpoint (the ground truth), 1000 bootstrap resamples. */
export const STUDY_DEFAULTS = {
  n: 8,
  seed: 0,
  passkMaxTokens: ACTION_MAX_TOKENS,
  asapRuns: 4,
  asapMaxSteps: ASAP_PROTOCOL.maxSteps,
  asapMaxTokens: ASAP_PROTOCOL.maxTokens,
  concurrency: 2,
  resamples: 1000,
} as const satisfies Partial<StudySettings>;

/** What decides a study's results, for run.json (a resumed study must match it). */
export function studyConfig(s: StudySettings): Record<string, unknown> {
  return {
    tasks: resolve(s.tasksPath),
    reference: resolve(s.reference),
    code: resolve(s.code),
    n: s.n,
    passk_max_tokens: s.passkMaxTokens ?? STUDY_DEFAULTS.passkMaxTokens,
    asap_runs: s.asapRuns,
    asap_max_steps: s.asapMaxSteps,
    asap_max_tokens: s.asapMaxTokens ?? STUDY_DEFAULTS.asapMaxTokens,
    asap_instances: s.asapInstances ?? null,
    // Recorded only when not the default, so studies run before the option resume unchanged.
    ...(s.asapProfile && s.asapProfile !== 'bash' ? { asap_profile: s.asapProfile } : {}),
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

/** The instances that get ASAP episodes: the probes' tasks (the first N with asapInstances). */
function asapTasksOf(run: ScoringRun, s: StudySettings): LoadedTask[] {
  const probeTasks = new Set(run.items.map((i) => i.task));
  const tasks = s.tasks.filter((t) => probeTasks.has(t.instance_id));
  return s.asapInstances === undefined ? tasks : tasks.slice(0, s.asapInstances);
}

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

/** Runs one rung on one checkpoint with its tokens counted and its time taken. */
async function measured<R, T>(
  rung: SampleProbe,
  ckpt: string,
  backend: CompletionBackend,
  run: StudyRun,
  tick: (reused?: boolean) => void,
  score: (backend: CompletionBackend, hooks: ItemHooks<T>) => Promise<R>,
): Promise<{ result: R; cost: RungCost }> {
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
  return { result, cost: keptCost(run, fresh, computed) };
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
  const asap = await runAsapOverCheckpoints(
    run.checkpoints,
    asapTasks,
    asapProtocolSettings({
      tasksPath: s.tasksPath,
      reference: s.reference,
      runs: s.asapRuns,
      concurrency: s.concurrency,
      profile: s.asapProfile ?? 'bash',
      maxSteps: s.asapMaxSteps,
      maxTokens: s.asapMaxTokens ?? STUDY_DEFAULTS.asapMaxTokens,
      seed: s.seed,
      out,
      quiet: run.quiet,
      http: run.http,
      cache: run.cache,
      dtype: run.dtype,
      engine: run.engine,
      bos: run.bos,
    }),
  );
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
  const asapTasks = asapTasksOf(run, s);
  if (s.asapRuns > 0) referenceFiles(s.reference, asapTasks);
  const tasks = new Map(s.tasks.map((t) => [t.instance_id, t]));
  const passkItems = items.filter((i) => tasks.has(i.task));
  const ks = passAtKs(s.n);
  const costs: RungCost[] = [];
  // Two passes, as `probe screen` makes them: a checkpoint whose sampling fails keeps its scores.
  const loop = (label: string, units: number) => ({
    units,
    quiet: run.quiet,
    http: run.http,
    cache: run.cache,
    dtype: run.dtype,
    label,
    bos: run.bos,
    dir: run.dir,
  });
  const scored = await forEachCheckpoint(
    checkpoints,
    loop('code bpb, bpb, mcq', code.length + 2 * items.length),
    async (ckpt, backend, tick) => {
      const codeBpb = await measured<BpbResult, BpbItem>('code-bpb', ckpt, backend, run, tick, (b, hooks) =>
        scoreBpb(ckpt, b, code, hooks),
      );
      const bpb = await measured<BpbResult, BpbItem>('bpb', ckpt, backend, run, tick, (b, hooks) => scoreBpb(ckpt, b, items, hooks));
      const mcq = await measured<McqResult, McqItem>('mcq', ckpt, backend, run, tick, (b, hooks) =>
        scoreMcq(ckpt, b, items, 'likelihood', s.seed, hooks),
      );
      costs.push(codeBpb.cost, bpb.cost, mcq.cost);
      return { code_bpb: codeBpb.result, bpb: bpb.result, mcq: mcq.result };
    },
  );
  const pools = new TaskPools((t) => openSandbox('local', t), 2);
  let sampled;
  try {
    sampled = await forEachCheckpoint(checkpoints, loop('pass@k', passkItems.length), async (ckpt, backend, tick) => {
      const passk = await measured<PasskResult, PasskItem>('passk', ckpt, backend, run, tick, (b, hooks) =>
        scorePassk(
          ckpt,
          b,
          passkItems,
          {
            n: s.n,
            ks,
            ...SAMPLING,
            maxTokens: s.passkMaxTokens ?? STUDY_DEFAULTS.passkMaxTokens,
            seed: s.seed,
            taskOf: (item) => taskForItem(tasks.get(item.task)!, item),
            leaseFor: pools.leaseFor,
            gradersFor: pools.gradersFor,
            restore: restoreProbeState,
          },
          hooks,
        ),
      );
      costs.push(passk.cost);
      return passk.result;
    });
  } finally {
    await pools.close();
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
