/**
 * What a watched directory holds, and which of it is a finished checkpoint. A trainer
 * writes a checkpoint file by file, so a directory that is there is not yet a checkpoint:
 *
 * - with a ready directory (`--ready-dir`), once the trainer announced it there (ready.ts);
 * - with a marker (`--marker NAME`), it is complete once NAME exists in it (for a file
 *   checkpoint, once `<file>.NAME` exists beside it) — what a trainer that writes a
 *   "done" file wants;
 * - without one, once nothing in it has changed for the settle time: the newest status
 *   change (ctime, which a copy that keeps modification times cannot set back) of every
 *   file and directory in it is at least that old.
 *
 * Either way its fingerprint (every path, size and modification time) is taken before and
 * after reading it, so a checkpoint still being written while it is read is not complete.
 *
 * Entries: a directory (ONNX or Hugging Face layout), a `.gguf` file, or a `.url` file whose
 * text is a server address (replicas comma-separated) — what `--ckpt` takes. Names that
 * start with `.` (a trainer's temporary directory) and marker files are not entries.
 *
 * The fingerprint only looks (`lstat`, never following a link inside an entry or opening a
 * file), so nothing a watched directory holds can make a look block. Before a checkpoint is
 * read, `checkEntryTree` holds its directory to safe-tree's rules: regular files,
 * directories and links that stay inside it — a FIFO, a device, a link out of it (to a host
 * file, to `/dev/zero`) is that checkpoint's failure, naming the path, and the watch goes on.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, statSync, type Stats } from 'node:fs';
import { join, relative } from 'node:path';
import { InputError } from '../errors.ts';
import { checkTree, readTextFile } from '../util/safe-tree.ts';

export type EntryKind = 'directory' | 'gguf' | 'server';

export interface WatchedEntry {
  /** The entry's path (as found under the watched directory). */
  path: string;
  /** The watched directory it is under. */
  watched: string;
  kind: EntryKind;
}

export type Completeness = { complete: true; fingerprint: string } | { complete: false; why: string };

/** A checkpoint directory holds a handful of files; a tree far larger is not one (and is not walked whole). */
const MAX_TREE_ENTRIES = 10_000;

/** What an entry at `path` is, or undefined where it is no checkpoint form. */
export function kindOf(path: string, stats: Stats): EntryKind | undefined {
  if (stats.isDirectory()) return 'directory';
  if (!stats.isFile()) return undefined;
  if (/\.gguf$/i.test(path)) return 'gguf';
  if (/\.url$/i.test(path)) return 'server';
  return undefined;
}

/** Each watched directory is one (checked before a run directory is made for them, and at every look). */
export function checkWatched(watched: readonly string[]): void {
  for (const dir of watched)
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new InputError({ file: dir }, 'not a directory to watch');
}

/** The entries of the watched directories, in name order; a watched directory that is not one is bad input. */
export function listEntries(watched: readonly string[], marker: string | undefined): WatchedEntry[] {
  const entries: WatchedEntry[] = [];
  checkWatched(watched);
  for (const dir of watched) {
    for (const name of readdirSync(dir).sort()) {
      if (name.startsWith('.')) continue;
      if (marker && name.endsWith(`.${marker}`)) continue;
      const path = join(dir, name);
      let stats: Stats;
      try {
        stats = statSync(path); // a link to a checkpoint elsewhere is that checkpoint
      } catch {
        continue; // gone between the listing and the look (a trainer's rename), or a dangling link
      }
      const kind = kindOf(path, stats);
      if (kind) entries.push({ path, watched: dir, kind });
    }
  }
  return entries;
}

interface TreeState {
  fingerprint: string;
  newestChangeMs: number;
}

/** Every path under `path` (itself included) with its size and times, hashed; the newest status change. */
function treeState(path: string): TreeState {
  const hash = createHash('sha256');
  let newest = 0;
  let seen = 0;
  const visit = (p: string) => {
    if (++seen > MAX_TREE_ENTRIES) throw new InputError({ file: path }, `holds more than ${MAX_TREE_ENTRIES} files: not a checkpoint`);
    const s = p === path ? statSync(p) : lstatSync(p);
    newest = Math.max(newest, s.ctimeMs, s.mtimeMs);
    hash.update(`${relative(path, p)}\0${s.isDirectory() ? 'd' : s.size}\0${s.mtimeMs}\n`);
    if (s.isDirectory()) for (const name of readdirSync(p).sort()) visit(join(p, name));
  };
  visit(path);
  return { fingerprint: hash.digest('hex'), newestChangeMs: newest };
}

/**
 * An entry's directory held to safe-tree's rules before anything reads it (a file entry is
 * checked where it is opened): only regular files, directories and links inside it. A link
 * to the entry itself from the watched directory is followed — it is that checkpoint.
 */
export function checkEntryTree(entry: WatchedEntry): void {
  if (entry.kind !== 'directory') return;
  checkTree(entry.path, {
    what: 'a watched checkpoint',
    limits: { entries: MAX_TREE_ENTRIES, fileBytes: Number.POSITIVE_INFINITY, totalBytes: Number.POSITIVE_INFINITY },
  });
}

/** The fingerprint of an entry as it is now (what `completeness` compares after reading it). */
export function fingerprintOf(entry: WatchedEntry): string {
  return treeState(entry.path).fingerprint;
}

/** Whether an entry is a finished checkpoint now (see the top of this file). */
export function completeness(
  entry: WatchedEntry,
  options: {
    marker?: string | undefined;
    settleMs: number;
    /** With `--ready-dir`: whether the trainer announced it (ready.ts), which alone decides. */
    announced?: boolean | undefined;
    nowMs?: number;
  },
): Completeness {
  let state: TreeState;
  try {
    state = treeState(entry.path);
  } catch (error) {
    if (error instanceof InputError) throw error;
    return { complete: false, why: 'changing while it was read' }; // a file removed between the listing and its stat
  }
  if (options.announced !== undefined)
    return options.announced ? { complete: true, fingerprint: state.fingerprint } : { complete: false, why: 'not announced yet' };
  if (options.marker) {
    const marker = entry.kind === 'directory' ? join(entry.path, options.marker) : `${entry.path}.${options.marker}`;
    return existsSync(marker) ? { complete: true, fingerprint: state.fingerprint } : { complete: false, why: `no ${options.marker} yet` };
  }
  const quietFor = (options.nowMs ?? Date.now()) - state.newestChangeMs;
  if (quietFor < options.settleMs)
    return { complete: false, why: `still changing: complete once nothing in it changed for ${options.settleMs / 1000} s` };
  return { complete: true, fingerprint: state.fingerprint };
}

/** The `--ckpt` argument an entry stands for: its path, or for a `.url` file the address it holds. */
export function checkpointSpec(entry: WatchedEntry): string {
  if (entry.kind !== 'server') return entry.path;
  const text = readTextFile(entry.path, { what: 'a .url checkpoint' }).trim();
  if (!text || text.includes('\n'))
    throw new InputError({ file: entry.path }, 'a .url checkpoint holds one line: the server address (replicas comma-separated)');
  return text;
}
