/**
 * The settings of the rungs every pipeline composes (`probe screen`/`demo`, `probe
 * validate`, `probe watch`), each with its defaults written once, and the one record of
 * them a run directory keeps: paths resolved and defaults filled here, for every verb alike.
 */
import { resolve } from 'node:path';
import { ACTION_MAX_TOKENS, ASAP_PROTOCOL } from '../../protocol.ts';
import type { LoadedTask } from '../../schema/task.ts';
import type { ToolProfile } from '../../swe/profiles.ts';

/** The probes' tasks (pass@K grades in them, ASAP runs them) and the seed every sampling rung draws from. */
export interface TaskSettings {
  tasks: LoadedTask[];
  tasksPath: string;
  seed: number;
}

/** General code BPB: plain held-out code, a file or a directory of sources. */
export interface CodeBpbSettings {
  code: string;
}

/** Prefix pass@K. */
export interface PasskSettings {
  n: number;
  /** Tokens per sampled action (default `ACTION_MAX_TOKENS`). */
  passkMaxTokens?: number | undefined;
  /**
   * pass@K's token limit per checkpoint as this multiple of the longest gold action among the
   * items in that checkpoint's own tokens (at most `passkMaxTokens`): the same text is 232
   * tokens to a BPE rung and 592 to a byte-level one, and a limit written once in tokens is
   * far longer than any action for the one and barely enough for the other.
   */
  passkGoldMargin?: number | undefined;
  /**
   * pass@K on one rendering of each trajectory (its first item: the native context) instead of every rendering.
   * The renderings of one trajectory share its decisive action, so they are not independent draws of the task.
   */
  passkOnePerTrajectory?: boolean | undefined;
}

/** ASAP episodes on the probes' tasks, from the reference trajectories' prefixes. */
export interface AsapSettings {
  reference: string;
  asapRuns: number;
  asapMaxSteps: number;
  /** New tokens per model step (default: the protocol's). */
  asapMaxTokens?: number | undefined;
  /** Only the first N instances get ASAP episodes (default: all the probes' tasks). */
  asapInstances?: number | undefined;
  /** Tools the episodes may use (default bash, the protocol's; editor where the checkpoints' transcripts used str_replace_editor). */
  asapProfile?: ToolProfile | undefined;
  /** Episodes at once. */
  concurrency: number;
}

/** Every rung after BPB and MCQ (which need only the probe items and the seed). */
export type RungSettings = TaskSettings & PasskSettings & AsapSettings;

/** The rungs' defaults, one place for every verb: pass@K with n = 8, 2 ASAP runs per instance, the protocol's token limits. */
export const RUNG_DEFAULTS = {
  n: 8,
  seed: 0,
  passkMaxTokens: ACTION_MAX_TOKENS,
  asapRuns: 2,
  asapMaxSteps: ASAP_PROTOCOL.maxSteps,
  asapMaxTokens: ASAP_PROTOCOL.maxTokens,
  asapProfile: 'bash',
  concurrency: 2,
} as const satisfies Partial<RungSettings>;

/** pass@K's token cap: the one asked for, else the default. */
export const passkMaxTokensOf = (s: Pick<PasskSettings, 'passkMaxTokens'>): number => s.passkMaxTokens ?? RUNG_DEFAULTS.passkMaxTokens;

/** ASAP's tokens per step: the ones asked for, else the protocol's. */
export const asapMaxTokensOf = (s: Pick<AsapSettings, 'asapMaxTokens'>): number => s.asapMaxTokens ?? RUNG_DEFAULTS.asapMaxTokens;

/** ASAP's tools: the profile asked for, else the protocol's (bash). */
export const asapProfileOf = (s: Pick<AsapSettings, 'asapProfile'>): ToolProfile => s.asapProfile ?? RUNG_DEFAULTS.asapProfile;

/** The paths the rungs read, absolute: what a run directory records, so a rerun from elsewhere is compared by the files it names. */
export function resolvedPaths<S extends Partial<TaskSettings & AsapSettings & CodeBpbSettings>>(s: S): S {
  return {
    ...s,
    ...(s.tasksPath === undefined ? {} : { tasksPath: resolve(s.tasksPath) }),
    ...(s.reference === undefined ? {} : { reference: resolve(s.reference) }),
    ...(s.code === undefined ? {} : { code: resolve(s.code) }),
  };
}

/** Each rung setting as run.json records it: paths resolved, defaults filled. */
function recordOf(s: RungSettings & Partial<CodeBpbSettings>) {
  const r = resolvedPaths(s);
  return {
    code: r.code,
    tasks: r.tasksPath,
    reference: r.reference,
    n: s.n,
    passk_max_tokens: passkMaxTokensOf(s),
    asap_runs: s.asapRuns,
    asap_max_steps: s.asapMaxSteps,
    asap_max_tokens: asapMaxTokensOf(s),
    asap_instances: s.asapInstances ?? null,
    asap_profile: asapProfileOf(s),
  };
}

export type RungRecordKey = keyof ReturnType<typeof recordOf>;

/**
 * The rung settings `keys` as run.json records them, in that order: a verb records the ones
 * its results depend on, in the order its run.json has always had them.
 */
export function rungRecord(s: RungSettings & Partial<CodeBpbSettings>, keys: readonly RungRecordKey[]): Record<string, unknown> {
  const all = recordOf(s);
  return Object.fromEntries(keys.map((k) => [k, all[k]]));
}
