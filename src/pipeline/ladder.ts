/**
 * The ladder as `probe screen` and `probe demo` run it: BPB and MCQ for every checkpoint,
 * pass@K for the best by combined rank, a shortlist by pass@1, and ASAP episodes for the
 * shortlist. Each rung writes its items to the run directory as they finish, so a killed
 * ladder resumes where it stopped. Where each checkpoint's stage runs — in this process,
 * or in a Slurm job of its own — is ladder-stages.ts's seam; what each stage gets is
 * decided here, the same either way.
 */
import { join, resolve } from 'node:path';
import { rankingAccuracy } from '../probes/mcq.ts';
import { DEFAULT_IMAGE_SOURCES, type ImageSources } from '../settings/image-sources.ts';
import { ensureOutputDir } from '../store/output-path.ts';
import type { EnvironmentSummary, LadderRow } from '../schema/ladder-row.ts';
import type { EnvironmentDeclaration, EnvironmentResult } from '../asap/environment.ts';
import { type EnvironmentPlan, optionValue } from '../asap/episode-plan.ts';
import { ENVIRONMENTS } from '../environments/registry.ts';
import { runEnvironmentEpisodes } from './episode-run.ts';
import { averageRanks } from '../stats/correlation.ts';
import type { Failure, ScoringRun } from './checkpoint-loop.ts';
import { ASAP_PROTOCOL, SAMPLING } from '../protocol.ts';
import { asapTasksOf, checkReferences } from './rungs/asap.ts';
import { localStages } from './ladder-stages.ts';
import { slurmStages } from './slurm-stages.ts';
import type { SlurmSettings } from '../slurm/settings.ts';
import { asapMaxTokensOf, RUNG_DEFAULTS, type RungSettings, rungRecord } from './rungs/settings.ts';

export interface LadderSettings extends RungSettings {
  shortlist: number;
  /** Checkpoints that get pass@K (default: twice the shortlist). */
  passkTop?: number | undefined;
  /** ASAP run directory when the ladder has no run directory of its own. */
  asapOut?: string | undefined;
  /** Treat controls (checkpoints that have seen the probes) as candidates: shortlisted and recommended like any other. */
  includeControls?: boolean | undefined;
  /** The environment kinds the shortlist's ASAP episodes run in (default: swe only). */
  asapEnvs?: readonly string[] | undefined;
  /** Those environments' own options by name (`terminalTasks`, `researchSet`; default: each option's own). */
  environmentOptions?: Readonly<Record<string, unknown>> | undefined;
  /** Where environment images and their builds' packages come from (default: pull what is missing, public indexes). */
  imageSources?: ImageSources | undefined;
  /** Each checkpoint's stage as a Slurm job (slurm-stages.ts; needs the run directory). Decides no number: not in ladderConfig. */
  slurm?: SlurmSettings | undefined;
}

const envsOf = (s: LadderSettings): readonly string[] => s.asapEnvs ?? ['swe'];

/** The registered environments with episodes of their own that the ladder runs beside SWE's, in the registry's order. */
const otherEnvironmentsOf = (s: LadderSettings): EnvironmentDeclaration<EnvironmentResult>[] =>
  ENVIRONMENTS.filter((e) => e.episodes && envsOf(s).includes(e.name));

/** `probe screen`'s defaults: the rungs' (a shortlist of 2, pass@K on twice the shortlist). */
export const LADDER_DEFAULTS = { ...RUNG_DEFAULTS, shortlist: 2 } as const satisfies Partial<LadderSettings>;

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
  /** The run directories of the other environment kinds, where the ladder ran them, by name. */
  envOuts: Record<string, string>;
  failures: Failure[];
}

/** What decides a ladder's results, for run.json (a resumed run must match it). */
export function ladderConfig(s: LadderSettings): Record<string, unknown> {
  const envs = envsOf(s);
  return {
    shortlist: s.shortlist,
    passk_top: s.passkTop ?? 2 * s.shortlist,
    ...rungRecord(s, ['n', 'tasks', 'reference', 'asap_runs', 'asap_max_steps', 'passk_max_tokens', 'asap_max_tokens', 'asap_instances']),
    include_controls: Boolean(s.includeControls),
    // Only when set: ladders from before resume with the settings they recorded.
    ...(s.passkOnePerTrajectory ? { passk_items: 'one per trajectory' } : {}),
    ...(s.passkGoldMargin ? { passk_gold_margin: s.passkGoldMargin } : {}),
    // Only where it is not SWE alone: ladders from before keep the settings they resume with.
    ...(envs.join() === 'swe'
      ? {}
      : {
          asap_envs: [...envs],
          // Each environment's inputs it declares worth recording (its task directories), as absolute paths.
          ...Object.fromEntries(
            otherEnvironmentsOf(s).flatMap((e) =>
              e.episodes!.options.flatMap((option) =>
                option.ladderRecord ? [[option.ladderRecord, resolve(String(optionValue(s.environmentOptions ?? {}, option)))]] : [],
              ),
            ),
          ),
        }),
  };
}

export async function runLadder(run: ScoringRun, s: LadderSettings): Promise<LadderOutcome> {
  const { items, dir } = run;
  // The ASAP stage writes last, after the cheap stages: a directory of its own (--asap-out, without a run directory) is checked now.
  if (s.asapOut && !dir && s.asapRuns > 0) ensureOutputDir(s.asapOut, '--asap-out');
  // The last rung's input is checked before the first rung's work: a missing reference must not cost hours.
  const envs = envsOf(s);
  const asapTasks = asapTasksOf(items, s);
  if (envs.includes('swe')) checkReferences(s, asapTasks);
  const envPlans = s.asapRuns > 0 ? otherEnvironmentsOf(s).map((env) => ({ env, plan: environmentPlan(env, s, run) })) : [];
  // Where each checkpoint's stage runs: here, or (--slurm) in a Slurm job of its own; the decisions between stages are made here either way.
  const stages = s.slurm && dir ? slurmStages({ ...run, dir }, s.slurm) : localStages(run, s);
  const cheap = await stages.run('cheap', run.checkpoints);
  const results = cheap.results;
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
  const passk = await stages.run(
    'passk',
    top.map((r) => checkpointNamed.get(r.checkpoint)!),
  );
  failures.push(...passk.failures);
  for (const r of passk.results) rows.find((x) => x.checkpoint === r.checkpoint)!.pass_at = r.pass_at;
  dir?.writeResults({ passk: passk.results }, 'passk.json');
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
    maxTokens: asapMaxTokensOf(s),
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
    const asap = await stages.run('asap', shortlisted);
    asapOut = asap.asap?.out ?? null;
    asapInstances = asap.asap?.instances ?? null;
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
  for (const { env, plan } of shortlist.length > 0 ? envPlans : []) {
    const ran = await runEnvironmentEpisodes<EnvironmentResult>(shortlisted, plan, {
      ...episodes,
      out: dir ? join(dir.dir, `asap-${env.name}`) : undefined,
    });
    failures.push(...ran.failures);
    envOuts[env.name] = ran.out;
    for (const r of ran.results) rowOf(r.checkpoint).asap_envs = { ...rowOf(r.checkpoint).asap_envs, [env.name]: headline(r) };
  }
  return { rows, shortlist, asapOut, asapInstances, envOuts, failures };
}

/**
 * An environment's plan for the shortlist: its inputs read and checked now, before the first
 * rung's work (a missing task directory must not cost hours), with the ASAP protocol's prefix
 * and action limit and its own default profile.
 */
function environmentPlan(
  env: EnvironmentDeclaration<EnvironmentResult>,
  s: LadderSettings,
  run: ScoringRun,
): EnvironmentPlan<unknown, EnvironmentResult> {
  return env.episodes!.plan({
    runs: s.asapRuns,
    concurrency: s.concurrency,
    seed: s.seed,
    maxSteps: s.asapMaxSteps,
    maxTokens: asapMaxTokensOf(s),
    temperature: SAMPLING.temperature,
    topP: SAMPLING.topP,
    prefixSteps: ASAP_PROTOCOL.prefixSteps,
    actionTimeoutS: ASAP_PROTOCOL.actionTimeoutS,
    profile: undefined,
    sources: s.imageSources ?? DEFAULT_IMAGE_SOURCES,
    quiet: run.quiet,
    options: s.environmentOptions ?? {},
  });
}

function headline(r: EnvironmentResult): EnvironmentSummary {
  const { parsable_turns } = r.behaviour as { parsable_turns: number };
  return { pass_at_1: r.pass_at['1'] ?? 0, intersection: r.intersection, parsable_turns };
}
