/**
 * A checkpoint a poll found complete: its entry, the `--ckpt` it stands for and where it
 * sits in training. A Slurm job is handed one as a file (`--job FILE`), so that it scores
 * exactly what the watch decided to, without looking at the watched directory again.
 */
import { InputError } from '../errors.ts';
import { readJsonFile } from '../util/safe-tree.ts';
import type { EntryKind, WatchedEntry } from './discover.ts';

export interface Found {
  entry: WatchedEntry;
  spec: string;
  key: string;
  fingerprint: string;
  step: number;
  stepSource: string;
  series: string;
}

const KINDS: readonly EntryKind[] = ['directory', 'gguf', 'server'];

/** A found checkpoint as `submit` wrote it; anything else is one line naming the file and field. */
export function parseFound(file: string): Found {
  const doc = readJsonFile(file, { what: "a Slurm job's checkpoint" }) as Record<string, unknown> | null;
  const fail = (field: string, expected: string): never => {
    throw new InputError({ file, field }, `expected ${expected}`);
  };
  if (typeof doc !== 'object' || doc === null) return fail('entry', 'a JSON object');
  const entry = doc.entry as Record<string, unknown> | null;
  if (typeof entry !== 'object' || entry === null) fail('entry', 'an object');
  for (const field of ['path', 'watched'] as const) if (typeof entry![field] !== 'string') fail(`entry.${field}`, 'a string');
  if (!KINDS.includes(entry!.kind as EntryKind)) fail('entry.kind', KINDS.join(' | '));
  for (const field of ['spec', 'key', 'fingerprint', 'stepSource', 'series'] as const)
    if (typeof doc[field] !== 'string') fail(field, 'a string');
  if (!Number.isSafeInteger(doc.step) || (doc.step as number) < 0) fail('step', 'a training step (an integer ≥ 0)');
  return doc as unknown as Found;
}
