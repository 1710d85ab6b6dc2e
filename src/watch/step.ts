/**
 * Where a checkpoint sits in training: its step, read from its config.json (or a Hugging
 * Face trainer_state.json beside it) where one says, else from its name; and the training
 * run it belongs to (its series in the trend), its name with the step taken out.
 */
import { existsSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { CHECKPOINT_DIR, CHECKPOINT_JSON_BYTES } from '../backends/checkpoint-limits.ts';
import { readTextFile } from '../util/safe-tree.ts';

export interface TrainingPosition {
  step: number;
  /** Where the step was read: `config.json train_steps`, `the name`, … (shown when it surprises). */
  source: string;
  /** The training run: the name without its step (`agentmix-mix25-s250` → `agentmix-mix25`). */
  series: string;
}

/** Keys of a config.json (dotted: nested) that hold the training step, first match wins. */
const CONFIG_STEP_KEYS = ['probe_ladder.train_steps', 'train_steps', 'global_step', 'step', 'training_step'] as const;

/** A step in a name: after a word that says so (`step-4000`, `ckpt_12k`, `s250`, `iter0001`), else the last number. */
const NAMED_STEP = /(?:^|[^a-z0-9])(?:global[-_]?step|checkpoint|iteration|step|ckpt|iter|s)[-_]?(\d+)(k|m)?(?=$|[^a-z0-9])/gi;
const LAST_NUMBER = /(\d+)(k|m)?(?!.*\d)/i;

/** Names that say "a checkpoint" and nothing of the run: such a series is named after the directory watched. */
const GENERIC_SERIES = new Set([
  '',
  'checkpoint',
  'checkpoints',
  'ckpt',
  'step',
  'global-step',
  'global_step',
  'iter',
  'iteration',
  'model',
]);

function nested(value: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((v, key) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), value);
}

function wholeStep(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function readJsonIn(dir: string, file: string): unknown {
  const path = join(dir, file);
  if (!existsSync(path)) return undefined;
  try {
    // Through safe-tree: a FIFO, a device or a link out of the checkpoint in a step file's place must not block the watch's look.
    return JSON.parse(readTextFile(path, { root: dir, maxBytes: CHECKPOINT_JSON_BYTES, what: CHECKPOINT_DIR }));
  } catch {
    return undefined; // opening the checkpoint reports a malformed or unreadable config.json, with its field
  }
}

/** The step a directory's own files record, if any. */
function recordedStep(path: string): { step: number; source: string } | undefined {
  if (!existsSync(path) || !statSync(path).isDirectory()) return undefined;
  const config = readJsonIn(path, 'config.json');
  for (const key of CONFIG_STEP_KEYS) {
    const step = wholeStep(nested(config, key));
    if (step !== undefined) return { step, source: `config.json ${key}` };
  }
  const state = wholeStep(nested(readJsonIn(path, 'trainer_state.json'), 'global_step'));
  return state === undefined ? undefined : { step: state, source: 'trainer_state.json global_step' };
}

const scale = (digits: string, unit: string | undefined) =>
  Number(digits) * (unit?.toLowerCase() === 'k' ? 1000 : unit?.toLowerCase() === 'm' ? 1_000_000 : 1);

/** The step a name says, and the name with it cut out. */
export function stepInName(name: string): { step: number; rest: string } | undefined {
  const stem = name.replace(/\.(gguf|url)$/i, '');
  const named = [...stem.matchAll(NAMED_STEP)].at(-1);
  if (named) {
    const start = named.index + (named[0].length - named[0].replace(/^[^a-z0-9]/i, '').length);
    return { step: scale(named[1]!, named[2]), rest: stem.slice(0, start) + stem.slice(named.index + named[0].length) };
  }
  const last = LAST_NUMBER.exec(stem);
  if (!last) return undefined;
  return { step: scale(last[1]!, last[2]), rest: stem.slice(0, last.index) + stem.slice(last.index + last[0].length) };
}

/**
 * The training run of the checkpoint at `path` (an entry of the watched directory
 * `watched`): its name with the step cut out, or the watched directory's name where what
 * is left says only "a checkpoint".
 */
export function trainingRun(path: string, watched: string): string {
  const name = basename(path);
  const rest = (stepInName(name)?.rest ?? name.replace(/\.(gguf|url)$/i, '')).replace(/[-_.]+$/, '').replace(/^[-_.]+/, '');
  return GENERIC_SERIES.has(rest.toLowerCase()) ? basename(watched) : rest;
}

/** The step a checkpoint's own files record, else its name says; undefined where neither does. */
export function trainingStep(path: string): { step: number; source: string } | undefined {
  const recorded = recordedStep(path);
  if (recorded) return recorded;
  const inName = stepInName(basename(path));
  // A number past 2^53 (a hash, a date-time in a name) is no step: one it cannot hold exactly would mislabel the point.
  return inName && Number.isSafeInteger(inName.step) ? { step: inName.step, source: 'the name' } : undefined;
}

/** The training position of the checkpoint at `path` (an entry of the watched directory `watched`); undefined where neither its files nor its name say a step. */
export function trainingPosition(path: string, watched: string): TrainingPosition | undefined {
  const at = trainingStep(path);
  return at && { ...at, series: trainingRun(path, watched) };
}
