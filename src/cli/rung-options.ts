/**
 * The rungs' flags, each written once — its name, help, parser and default — for the verbs
 * that run rungs (`screen`, `demo`, `validate`, `watch`), and the rung settings they give.
 * A verb lists the flags it offers in the order its help has always shown them, and says
 * its own help or default where its rung differs (the study's ground truth runs 4 episodes,
 * the demo's budgets are smaller, and a watch's 0 turns a rung off).
 */
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { REPO_ROOT } from '../embedded.ts';
import { RUNG_DEFAULTS, type RungSettings } from '../pipeline/rungs/settings.ts';
import { ENVIRONMENT_NAMES } from '../environments/registry.ts';
import type { LoadedTask } from '../schema/task.ts';
import { TOOL_PROFILES, type ToolProfile } from '../swe/profiles.ts';
import { integer, nonNegativeInteger, positiveInteger } from './args.ts';

interface FlagSpec {
  flags: string;
  help: string;
  parse?: (value: string) => unknown;
  choices?: readonly string[];
  default?: unknown;
}

const RUNG_FLAGS = {
  tasks: {
    flags: '--tasks <dir|file>',
    help: "task records of the probes' tasks (and of the ASAP episodes)",
    default: join(REPO_ROOT, 'verifiers'),
  },
  seed: { flags: '--seed <n>', help: 'sampling seed (a whole number)', parse: integer, default: RUNG_DEFAULTS.seed },
  // Plain code none of the embedded checkpoints was counted from: the demo tasks' repositories.
  code: {
    flags: '--code <file|dir>',
    help: 'plain held-out code for general code BPB (source files under a directory)',
    default: join(REPO_ROOT, 'verifiers'),
  },
  n: { flags: '-n, --n <n>', help: 'pass@K samples per item', parse: positiveInteger, default: RUNG_DEFAULTS.n },
  passkMaxTokens: {
    flags: '--passk-max-tokens <n>',
    help: 'tokens per sampled action in pass@K',
    parse: positiveInteger,
    default: RUNG_DEFAULTS.passkMaxTokens,
  },
  reference: { flags: '--reference <dir>', help: 'reference trajectories for the ASAP prefixes', default: join(REPO_ROOT, 'trajectories') },
  asapRuns: { flags: '--asap-runs <n>', help: 'ASAP episodes per instance', parse: nonNegativeInteger, default: RUNG_DEFAULTS.asapRuns },
  asapMaxSteps: {
    flags: '--asap-max-steps <n>',
    help: 'model steps per ASAP episode',
    parse: positiveInteger,
    default: RUNG_DEFAULTS.asapMaxSteps,
  },
  asapMaxTokens: {
    flags: '--asap-max-tokens <n>',
    help: 'new tokens per ASAP step',
    parse: positiveInteger,
    default: RUNG_DEFAULTS.asapMaxTokens,
  },
  asapInstances: { flags: '--asap-instances <n>', help: "only the first N of the probes' tasks get ASAP episodes", parse: positiveInteger },
  asapProfile: {
    flags: '--asap-profile <profile>',
    help: 'tools the ASAP episodes may use (editor adds str_replace_editor)',
    choices: TOOL_PROFILES,
    default: RUNG_DEFAULTS.asapProfile,
  },
  concurrency: { flags: '--concurrency <n>', help: 'ASAP episodes at once', parse: positiveInteger, default: RUNG_DEFAULTS.concurrency },
  asapEnv: {
    flags: '--asap-env <kind...>',
    help: `environment kinds of the shortlist's ASAP episodes, side by side: ${ENVIRONMENT_NAMES.join(', ')}`,
    choices: ENVIRONMENT_NAMES,
    default: ['swe'],
  },
} as const satisfies Record<string, FlagSpec>;

export type RungFlagName = keyof typeof RUNG_FLAGS;

/** A flag as a verb offers it: by name, or with the help, parser or default its rung has there. */
export type RungFlagUse = RungFlagName | [RungFlagName, Partial<Omit<FlagSpec, 'flags'>>];

/** The parsed rung flags (those a verb does not offer are absent). */
export interface RungFlags {
  tasks: string;
  reference: string;
  seed: number;
  n: number;
  passkMaxTokens: number;
  asapRuns: number;
  asapMaxSteps: number;
  asapMaxTokens: number;
  asapInstances?: number;
  asapProfile?: ToolProfile;
  concurrency: number;
}

/** Adds the rung flags `uses` names to `command`, in that order. */
export function addRungOptions(command: Command, uses: readonly RungFlagUse[]): Command {
  for (const use of uses) {
    const [name, own] = typeof use === 'string' ? [use, {}] : use;
    const spec: FlagSpec = { ...RUNG_FLAGS[name], ...own };
    const option = new Option(spec.flags, spec.help);
    if (spec.parse) option.argParser(spec.parse);
    if (spec.choices) option.choices([...spec.choices]);
    if (spec.default !== undefined) option.default(spec.default);
    command.addOption(option);
  }
  return command;
}

/** The rung settings the flags ask for, with the tasks `--tasks` names loaded. */
export function rungSettings(flags: RungFlags, tasks: LoadedTask[]): RungSettings {
  return {
    tasks,
    tasksPath: flags.tasks,
    reference: flags.reference,
    seed: flags.seed,
    n: flags.n,
    passkMaxTokens: flags.passkMaxTokens,
    asapRuns: flags.asapRuns,
    asapMaxSteps: flags.asapMaxSteps,
    asapMaxTokens: flags.asapMaxTokens,
    asapInstances: flags.asapInstances,
    asapProfile: flags.asapProfile,
    concurrency: flags.concurrency,
  };
}
