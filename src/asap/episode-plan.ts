/**
 * How an environment's episodes are run over checkpoints — the half of its contract that
 * `probe asap --env NAME` and the screening ladder's `--asap-env NAME` call. The
 * environment reads and checks its instances and says what its run is
 * (`EnvironmentEpisodes.plan`); pipeline/episode-run.ts opens the run directory, serves
 * each checkpoint in turn, runs the plan and writes transcripts and results.json. Its
 * flags are data here, so the verbs add them without knowing the environment.
 */
import type { z } from 'zod';
import type { CompletionBackend } from '../backends/types.ts';
import type { ItemHooks } from '../probes/memo.ts';
import type { ImageSources } from '../settings/image-sources.ts';
import type { RunDir } from '../store/run-dir.ts';
import type { EpisodeProtocol } from './episodes.ts';

/** One flag an environment adds to `probe asap` (and, where `ladder` is set, to the ladder's verbs). */
export interface EnvironmentOption {
  /** As commander takes it: `--research-set <dir>`. Its value reaches `plan` under commander's name for it (`researchSet`). */
  flags: string;
  help: string;
  default?: string | number;
  /** How its value is read (the verbs' parser of that name); a path or text where absent. */
  value?: 'positive integer';
  /** Offered by `probe screen` with `--asap-env`, and recorded in the ladder's run.json under this key (a path, made absolute). */
  ladderRecord?: string;
}

/** What an environment's run is given: the episode protocol, and its own flags' values. */
export interface EnvironmentRunSettings extends EpisodeProtocol {
  /** No progress lines (`--json`). */
  quiet: boolean;
  prefixSteps: number;
  actionTimeoutS: number;
  /** `--profile` where the user gave one; undefined: the environment's own default. */
  profile: string | undefined;
  /** Where images and their builds' packages come from, for an environment that builds any. */
  sources: ImageSources;
  /** `--instances`, `--limit`: which of its instances run. */
  instances?: readonly string[] | undefined;
  limit?: number | undefined;
  /** Its options' values by commander's attribute name; an absent one takes the option's default. */
  options: Readonly<Record<string, unknown>>;
}

/** An environment's run, as pipeline/episode-run.ts runs it: its settings, its instances, and one checkpoint's episodes. */
export interface EpisodeRunPlan<Rec, Res> {
  /** The environment's name: its samples log, progress label and default run directory. */
  kind: string;
  /** What defines the episodes (a rerun must match it to resume; checkpoints may be added), before the serving settings. */
  config: Record<string, unknown>;
  /** Where the instances came from, and the instances (ids, or ids with their files' hash). */
  probeSet: { path: string; instances: readonly unknown[] };
  /** One episode's record as its samples log holds it: every record read back on resume is checked by it (schema/episode-records.ts). */
  recordSchema: z.ZodType;
  /** Episodes per checkpoint (progress units). */
  episodes: number;
  /** The run's first line, after "Writing"/"Resuming": `the terminal run in DIR (…)`. */
  describe: (out: string) => string;
  /** What must hold before the run says anything (an engine that answers). */
  check?: () => Promise<void>;
  /** Work before any model work (images, prefixes), with the run directory open. */
  prepare?: (dir: RunDir) => Promise<void>;
  run: (checkpoint: string, backend: CompletionBackend, hooks: ItemHooks<Rec>) => Promise<Res>;
  /** A finished episode's transcript: its instance, run and text (undefined where the record's instance is not in this run). */
  transcript: (record: Rec) => { instance: string; run: number; text: string } | undefined;
}

/** A plan as `probe asap` and the ladder take it: the run, and what is said about it besides the results. */
export interface EnvironmentPlan<Rec, Res> extends EpisodeRunPlan<Rec, Res> {
  /** `probe asap`'s table title: `Deep research on 4 questions × 2 runs`. */
  title: string;
  /** Facts of this invocation written in results.json after the settings (where images came from), not in --json. */
  recorded?: () => Record<string, unknown>;
  /** What the run learned besides the results (per-task facts), after the settings in results.json and before the results in --json. */
  facts?: () => Record<string, unknown>;
  /** Lines `probe asap` prints after its table, from the facts. */
  notes?: (facts: Record<string, unknown>) => string;
}

/** What the report shows of one instance's transcripts. */
export interface TranscriptsOf {
  instance: string;
  runs: number;
  /** After the instance's id: `1/2 resolved`. */
  summary: string;
  /** After `run N: `: `reward 1`. */
  runLabel: (run: number) => string;
}

/** Running an environment's episodes: its flags, and its instances read and checked into a plan before any work. */
export interface EnvironmentEpisodes {
  options: readonly EnvironmentOption[];
  /** The `--profile` values it takes, its default first (none: `--profile` is not read). */
  profiles?: readonly string[];
  /** Reads and checks everything the run needs (a bad file or flag: an InputError naming it), before any model work. */
  // biome-ignore lint/suspicious/noExplicitAny: each environment's plan has its own record and result types; the pipeline only passes them through
  plan(settings: EnvironmentRunSettings): EnvironmentPlan<any, any>;
  /**
   * Per result item, the instance whose transcripts (episodes/<checkpoint>/<instance>/run-N.md)
   * the report shows, its runs, a line on how it went, and each run's label. None: the report
   * shows no transcripts of this environment.
   */
  transcriptsOf?: (item: Record<string, unknown>) => TranscriptsOf;
}

/** The episode protocol of the settings (runs, concurrency, seed, steps, tokens, temperature, top-p), as an environment's run takes it. */
export function episodeProtocolOf(s: EnvironmentRunSettings): EpisodeProtocol {
  const { runs, concurrency, seed, maxSteps, maxTokens, temperature, topP } = s;
  return { runs, concurrency, seed, maxSteps, maxTokens, temperature, topP };
}

/** An option's value among `options` (by commander's name for it), or its default. */
export function optionValue<T>(options: Readonly<Record<string, unknown>>, option: EnvironmentOption): T {
  return (options[attributeName(option)] ?? option.default) as T;
}

/** commander's attribute name for a flag: `--research-set <dir>` → `researchSet`. */
export function attributeName(option: Pick<EnvironmentOption, 'flags'>): string {
  const long = /--([a-z0-9-]+)/.exec(option.flags)![1]!;
  return long.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
