/**
 * The ladder as `probe screen` and `probe demo` run it: BPB and MCQ for every checkpoint,
 * pass@K for the best by combined rank, a shortlist by pass@1, and ASAP episodes for the
 * shortlist. Each rung writes its items to the run directory as they finish, so a killed
 * ladder resumes where it stopped.
 */
import { join, resolve } from 'node:path';
import { referenceFiles } from '../swe/prepare.ts';
import type { BpbItem, BpbResult } from '../probes/bpb.ts';
import { scoreBpb } from '../probes/bpb.ts';
import { rankingAccuracy, scoreMcq, type McqItem, type McqResult } from '../probes/mcq.ts';
import { scorePassk, type PasskItem, type PasskResult } from '../probes/passk.ts';
import { restoreProbeState, taskForItem } from '../probes/restore.ts';
import { DEFAULT_IMAGE_SOURCES, type ImageSources } from '../sandbox/image-sources.ts';
import { openSandbox } from '../sandbox/open.ts';
import { TaskPools } from '../sandbox/pool.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { CompletionBackend } from '../backends/types.ts';
import type { EnvironmentSummary, LadderRow } from '../schema/ladder-row.ts';
import { EMBEDDED_RESEARCH_SET, EMBEDDED_TERMINAL_TASKS } from '../embedded.ts';
import { SEARCH_K } from '../research/search-index.ts';
import { loadTerminalTasks } from '../terminal/task.ts';
import { loadResearchSet, runResearchOverCheckpoints } from './research.ts';
import { runTerminalOverCheckpoints } from './terminal.ts';
import { averageRanks } from '../stats/correlation.ts';
import { asapProtocolSettings, runAsapOverCheckpoints } from './asap.ts';
import { forEachCheckpoint, itemHooks, type Failure, type ScoringRun } from './checkpoint-loop.ts';
import { ACTION_MAX_TOKENS, ASAP_PROTOCOL, type AsapEnvironment, passAtKs, SAMPLING } from '../protocol.ts';

export interface LadderSettings {
  shortlist: number;
  /** Checkpoints that get pass@K (default: twice the shortlist). */
  passkTop?: number | undefined;
  n: number;
  seed: number;
  tasks: LoadedTask[];
  tasksPath: string;
  reference: string;
  asapRuns: number;
  asapMaxSteps: number;
  /** Tokens per sampled action in pass@K (default 1024) and per model step in ASAP (default 2048). */
  passkMaxTokens?: number | undefined;
  /**
   * pass@K's token limit per checkpoint as this multiple of the longest gold action among the
   * items in that checkpoint's own tokens (at most `passkMaxTokens`): the same text is 232
   * tokens to a BPE rung and 592 to a byte-level one, and a limit written once in tokens is
   * far longer than any action for the one and barely enough for the other.
   */
  passkGoldMargin?: number | undefined;
  asapMaxTokens?: number | undefined;
  /** Only the first N instances get ASAP episodes (default: all the probes' tasks). */
  asapInstances?: number | undefined;
  /** ASAP run directory when the ladder has no run directory of its own. */
  asapOut?: string | undefined;
  concurrency: number;
  /** Treat controls (checkpoints that have seen the probes) as candidates: shortlisted and recommended like any other. */
  includeControls?: boolean | undefined;
  /**
   * pass@K on one rendering of each trajectory (its first item: the native context) instead of every rendering.
   * The renderings of one trajectory share its decisive action, so they are not independent draws of the task.
   */
  passkOnePerTrajectory?: boolean | undefined;
  /** The environment kinds the shortlist's ASAP episodes run in (default: swe only). */
  asapEnvs?: readonly AsapEnvironment[] | undefined;
  /** Terminal-Bench task directories and the deep-research set, for those kinds (default: the shipped ones). */
  terminalTasks?: string | undefined;
  /** Where terminal task images and their builds' packages come from (default: pull what is missing, public indexes). */
  imageSources?: ImageSources | undefined;
  researchSet?: string | undefined;
}

const envsOf = (s: LadderSettings): readonly AsapEnvironment[] => s.asapEnvs ?? ['swe'];

/** `probe screen`'s defaults: a shortlist of 2, pass@K with n = 8 on twice the shortlist, 2 ASAP runs per instance, the protocol's token limits. */
export const LADDER_DEFAULTS = {
  shortlist: 2,
  n: 8,
  seed: 0,
  asapRuns: 2,
  asapMaxSteps: ASAP_PROTOCOL.maxSteps,
  passkMaxTokens: ACTION_MAX_TOKENS,
  asapMaxTokens: ASAP_PROTOCOL.maxTokens,
  concurrency: 2,
} as const satisfies Partial<LadderSettings>;

/** The ladder's stages and their shares of a screen's time (the demo's, measured: docs/benchmarks.md), for the run's one progress display. */
export const SCREEN_STAGES = [
  { name: 'bpb + mcq', share: 0.1 },
  { name: 'pass@k', share: 0.5 },
  { name: 'asap', share: 0.2 },
] as const;

export interface LadderOutcome {
  rows: LadderRow[];
  shortlist: string[];
  asapOut: string | null;
  /** The instances ASAP episodes ran on (less any the leak check excluded); null where none ran. */
  asapInstances: number | null;
  /** The run directories of the other environment kinds, where the ladder ran them. */
  envOuts: Partial<Record<'terminal' | 'research', string>>;
  failures: Failure[];
}

/** What decides a ladder's results, for run.json (a resumed run must match it). */
export function ladderConfig(s: LadderSettings): Record<string, unknown> {
  const envs = envsOf(s);
  return {
    shortlist: s.shortlist,
    passk_top: s.passkTop ?? 2 * s.shortlist,
    n: s.n,
    tasks: resolve(s.tasksPath),
    reference: resolve(s.reference),
    asap_runs: s.asapRuns,
    asap_max_steps: s.asapMaxSteps,
    passk_max_tokens: s.passkMaxTokens ?? LADDER_DEFAULTS.passkMaxTokens,
    asap_max_tokens: s.asapMaxTokens ?? LADDER_DEFAULTS.asapMaxTokens,
    asap_instances: s.asapInstances ?? null,
    include_controls: Boolean(s.includeControls),
    // Only when set: ladders from before resume with the settings they recorded.
    ...(s.passkOnePerTrajectory ? { passk_items: 'one per trajectory' } : {}),
    ...(s.passkGoldMargin ? { passk_gold_margin: s.passkGoldMargin } : {}),
    // Only where it is not SWE alone: ladders from before keep the settings they resume with.
    ...(envs.join() === 'swe'
      ? {}
      : {
          asap_envs: [...envs],
          ...(envs.includes('terminal') ? { terminal_tasks: resolve(s.terminalTasks ?? EMBEDDED_TERMINAL_TASKS) } : {}),
          ...(envs.includes('research') ? { research_set: resolve(s.researchSet ?? EMBEDDED_RESEARCH_SET) } : {}),
        }),
  };
}

/** The instances that get ASAP episodes: the probes' tasks (the first N with asapInstances). */
function asapTasksOf(run: ScoringRun, s: LadderSettings): LoadedTask[] {
  const probeTasks = new Set(run.items.map((i) => i.task));
  const tasks = s.tasks.filter((t) => probeTasks.has(t.instance_id));
  return s.asapInstances === undefined ? tasks : tasks.slice(0, s.asapInstances);
}

/** The items pass@K samples: all of them, or the first rendering of each trajectory (`passkOnePerTrajectory`). */
export function passkItemsOf<T extends { source: { file: string } }>(
  items: readonly T[],
  s: Pick<LadderSettings, 'passkOnePerTrajectory'>,
): T[] {
  if (!s.passkOnePerTrajectory) return [...items];
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(item.source.file) && seen.add(item.source.file));
}

/** pass@K's token limit on one checkpoint: `passkMaxTokens`, or less by `passkGoldMargin` (see there). */
export function passkTokenLimit(
  s: Pick<LadderSettings, 'passkMaxTokens' | 'passkGoldMargin'>,
  items: readonly { gold: string }[],
  backend: Pick<CompletionBackend, 'encode'>,
): number {
  const cap = s.passkMaxTokens ?? LADDER_DEFAULTS.passkMaxTokens;
  if (!s.passkGoldMargin || items.length === 0) return cap;
  const longest = Math.max(...items.map((i) => backend.encode(i.gold).length));
  return Math.min(cap, Math.ceil(s.passkGoldMargin * longest));
}

export async function runLadder(run: ScoringRun, s: LadderSettings): Promise<LadderOutcome> {
  const { items, dir } = run;
  // The last rung's input is checked before the first rung's work: a missing reference must not cost hours.
  const envs = envsOf(s);
  if (s.asapRuns > 0 && envs.includes('swe')) referenceFiles(s.reference, asapTasksOf(run, s));
  const terminalTasks = s.asapRuns > 0 && envs.includes('terminal') ? loadTerminalTasks(s.terminalTasks ?? EMBEDDED_TERMINAL_TASKS) : [];
  const researchSet = s.asapRuns > 0 && envs.includes('research') ? loadResearchSet(s.researchSet ?? EMBEDDED_RESEARCH_SET) : null;
  const cheap = await forEachCheckpoint(
    run.checkpoints,
    {
      units: 2 * items.length,
      quiet: run.quiet,
      http: run.http,
      cache: run.cache,
      dtype: run.dtype,
      label: 'bpb + mcq',
      bos: run.bos,
      dir: run.dir,
    },
    async (ckpt, backend, tick) => {
      const bpb = await scoreBpb(ckpt, backend, items, itemHooks<BpbItem>(dir, 'bpb', ckpt, tick));
      const mcq = await scoreMcq(ckpt, backend, items, 'likelihood', s.seed, itemHooks<McqItem>(dir, 'mcq', ckpt, tick));
      return { bpb, mcq };
    },
  );
  const results = cheap.results as Array<{ bpb: BpbResult; mcq: McqResult }>;
  const bpbRank = averageRanks(results.map((r) => r.bpb.bpb));
  const mcqRank = averageRanks(results.map((r) => -rankingAccuracy(r.mcq)));
  const checkpointNamed = new Map(run.checkpoints.map((c) => [c.name, c]));
  const rows: LadderRow[] = results
    .map((r, i) => {
      const { facts } = checkpointNamed.get(r.bpb.checkpoint)!;
      return {
        checkpoint: r.bpb.checkpoint,
        bpb: r.bpb.bpb,
        mcq_acc: r.mcq.acc,
        mcq_acc_norm: r.mcq.acc_norm,
        cheap_rank: (bpbRank[i]! + mcqRank[i]!) / 2,
        pass_at: null,
        shortlisted: false,
        asap: null,
        control: facts.control,
        heldout_code_bpb: facts.heldout_code_bpb,
      };
    })
    .sort((a, b) => a.cheap_rank - b.cheap_rank || a.bpb - b.bpb);
  // A control is the ceiling the probes must detect: it gets pass@K beside the best candidates, never one of their places.
  const candidate = (r: LadderRow) => s.includeControls || !r.control;
  dir?.writeResults({ bpb: results.map((r) => r.bpb), mcq: results.map((r) => r.mcq) }, 'cheap.json');

  const failures = [...cheap.failures];
  const top = [...rows.filter(candidate).slice(0, s.passkTop ?? 2 * s.shortlist), ...rows.filter((r) => !candidate(r))];
  const tasks = new Map(s.tasks.map((t) => [t.instance_id, t]));
  const passkItems = passkItemsOf(items, s).filter((i) => tasks.has(i.task));
  const pools = new TaskPools((t) => openSandbox('local', t), 2);
  try {
    const passk = await forEachCheckpoint(
      top.map((r) => checkpointNamed.get(r.checkpoint)!),
      {
        units: passkItems.length,
        quiet: run.quiet,
        http: run.http,
        cache: run.cache,
        dtype: run.dtype,
        label: 'pass@k',
        bos: run.bos,
        dir: run.dir,
      },
      (ckpt, backend, tick) =>
        scorePassk(
          ckpt,
          backend,
          passkItems,
          {
            n: s.n,
            ks: passAtKs(s.n),
            ...SAMPLING,
            maxTokens: passkTokenLimit(s, passkItems, backend),
            seed: s.seed,
            taskOf: (item) => taskForItem(tasks.get(item.task)!, item),
            leaseFor: pools.leaseFor,
            gradersFor: pools.gradersFor,
            restore: restoreProbeState,
          },
          itemHooks<PasskItem>(dir, 'passk', ckpt, tick),
        ),
    );
    failures.push(...passk.failures);
    for (const r of passk.results as PasskResult[]) rows.find((x) => x.checkpoint === r.checkpoint)!.pass_at = r.pass_at;
    dir?.writeResults({ passk: passk.results }, 'passk.json');
  } finally {
    await pools.close();
  }
  // The shortlist: pass@1 among those that got pass@K, ties broken by the cheap rank.
  const ranked = top
    .filter((r) => candidate(r) && r.pass_at !== null)
    .sort((a, b) => (b.pass_at!['1'] ?? 0) - (a.pass_at!['1'] ?? 0) || a.cheap_rank - b.cheap_rank);
  for (const row of ranked.slice(0, s.shortlist)) row.shortlisted = true;
  const shortlist = ranked.slice(0, s.shortlist).map((r) => r.checkpoint);

  // The last rung: whole episodes for the shortlist only, on the tasks the probes come from.
  let asapOut: string | null = null;
  let asapInstances: number | null = null;
  const shortlisted = shortlist.map((name) => checkpointNamed.get(name)!);
  const envOuts: LadderOutcome['envOuts'] = {};
  const rowOf = (checkpoint: string) => rows.find((x) => x.checkpoint === checkpoint)!;
  const episodes = {
    runs: s.asapRuns,
    concurrency: s.concurrency,
    maxSteps: s.asapMaxSteps,
    maxTokens: s.asapMaxTokens ?? LADDER_DEFAULTS.asapMaxTokens,
    temperature: SAMPLING.temperature,
    topP: SAMPLING.topP,
    seed: s.seed,
    http: run.http,
    cache: run.cache,
    dtype: run.dtype,
    bos: run.bos,
    quiet: run.quiet,
    resume: true,
  };
  if (s.asapRuns > 0 && shortlist.length > 0 && envs.includes('swe')) {
    const asap = await runAsapOverCheckpoints(
      shortlisted,
      asapTasksOf(run, s),
      asapProtocolSettings({
        tasksPath: s.tasksPath,
        reference: s.reference,
        runs: s.asapRuns,
        concurrency: s.concurrency,
        profile: 'bash',
        maxSteps: s.asapMaxSteps,
        maxTokens: s.asapMaxTokens ?? LADDER_DEFAULTS.asapMaxTokens,
        seed: s.seed,
        out: dir ? join(dir.dir, 'asap') : s.asapOut,
        quiet: run.quiet,
        http: run.http,
        cache: run.cache,
        dtype: run.dtype,
        engine: run.engine,
        bos: run.bos,
      }),
    );
    asapOut = asap.out;
    asapInstances = asap.instances;
    failures.push(...asap.failures);
    for (const r of asap.results) {
      rowOf(r.checkpoint).asap = {
        pass_at_1: r.pass_at['1']!,
        intersection: r.intersection,
        parsable_turns: r.behaviour.parsable_turns,
        valid_tool_calls: r.behaviour.valid_tool_calls,
        autonomous_edits: r.behaviour.autonomous_edits,
      };
    }
  }
  // The same shortlist in the other environment kinds, side by side in the row.
  if (shortlist.length > 0 && terminalTasks.length > 0) {
    const terminal = await runTerminalOverCheckpoints(shortlisted, terminalTasks, {
      ...episodes,
      tasksPath: s.terminalTasks ?? EMBEDDED_TERMINAL_TASKS,
      profile: 'terminus',
      prefixSteps: ASAP_PROTOCOL.prefixSteps,
      actionTimeoutMs: ASAP_PROTOCOL.actionTimeoutS * 1000,
      sources: s.imageSources ?? DEFAULT_IMAGE_SOURCES,
      out: dir ? join(dir.dir, 'asap-terminal') : undefined,
    });
    failures.push(...terminal.failures);
    envOuts.terminal = terminal.out;
    for (const r of terminal.results) rowOf(r.checkpoint).asap_envs = { ...rowOf(r.checkpoint).asap_envs, terminal: headline(r) };
  }
  if (shortlist.length > 0 && researchSet) {
    const research = await runResearchOverCheckpoints(shortlisted, researchSet, {
      ...episodes,
      set: s.researchSet ?? EMBEDDED_RESEARCH_SET,
      searchK: SEARCH_K,
      out: dir ? join(dir.dir, 'asap-research') : undefined,
    });
    failures.push(...research.failures);
    envOuts.research = research.out;
    for (const r of research.results) rowOf(r.checkpoint).asap_envs = { ...rowOf(r.checkpoint).asap_envs, research: headline(r) };
  }
  return { rows, shortlist, asapOut, asapInstances, envOuts, failures };
}

function headline(r: { pass_at: Record<string, number>; intersection: number; behaviour: { parsable_turns: number } }): EnvironmentSummary {
  return { pass_at_1: r.pass_at['1'] ?? 0, intersection: r.intersection, parsable_turns: r.behaviour.parsable_turns };
}
