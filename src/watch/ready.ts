/**
 * Checkpoints a trainer announces (`--ready-dir DIR`): the trainer, not the file system's
 * quiet, says when a checkpoint is whole. Two forms are read, both written by the trainer
 * after the checkpoint's last byte (atomically: a temporary name starting with `.`, then a
 * rename, which is what OLMo-core's checkpoint-ready callback does):
 *
 * - `DIR/<run>/step-<n>.ready.json` (OLMo-core's layout): a JSON object. `path` names the
 *   checkpoint (absolute, or relative to the ready file's directory) and may lie outside
 *   the watched directories: an announced checkpoint is watched wherever it is. Without
 *   `path`, it announces the watched checkpoint of training run `<run>` at step n. Either
 *   way the checkpoint's place in training is `<run>` at step n (`step`, where present,
 *   must say n too). Other fields are the trainer's and are not read.
 * - `DIR/<name>.ready` or `DIR/<run>/<name>.ready`, any content: the watched entry named
 *   `<name>` (of training run `<run>` where it sits in one) is complete.
 *
 * A ready file that cannot be read is reported by the watch (naming the file and the field)
 * and announces nothing; the other announcements stand.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { readJsonFile } from '../util/safe-tree.ts';

export interface Announcement {
  /** The ready file. */
  file: string;
  /** The training run it is filed under (its subdirectory); none for a top-level `<name>.ready`. */
  run?: string;
  /** The step its name says (`step-<n>.ready.json`). */
  step?: number;
  /** The checkpoint it names, resolved (links followed where it exists). */
  path?: string;
  /** For a `<name>.ready` marker: the entry's name. */
  name?: string;
}

export interface ReadyDir {
  announcements: Announcement[];
  /** Ready files that could not be read: each announces nothing. */
  problems: InputError[];
}

const STEP_READY = /^step[-_]?(\d+)\.ready\.json$/;
const MARKER_READY = /^(.+)\.ready$/;
/** A trainer's inbox holds a ready file per checkpoint; far more is not an inbox (and is not read whole). */
const MAX_READY_FILES = 100_000;
const READY_JSON_BYTES = 64 * 1024;

function resolvedPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path); // not there (yet): compared as written
  }
}

function readStepFile(root: string, file: string, run: string, step: number): Announcement {
  if (!Number.isSafeInteger(step)) throw new InputError({ file }, 'the step in its name is past 2^53, more than a step can be');
  const doc = readJsonFile(file, { root, what: 'a ready file', maxBytes: READY_JSON_BYTES });
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new InputError({ file }, 'a ready file holds a JSON object');
  const { path, step: said } = doc as Record<string, unknown>;
  if (said !== undefined && said !== step)
    throw new InputError({ file, field: 'step' }, `says ${JSON.stringify(said)}, but the file's name says step ${step}`);
  if (path === undefined) return { file, run, step };
  if (typeof path !== 'string' || path === '' || path.includes('\0'))
    throw new InputError({ file, field: 'path' }, "expected the checkpoint's path, a non-empty string");
  return { file, run, step, path: resolvedPath(resolve(dirname(file), path)) };
}

/** Every announcement under `dir` now (a listing, then each ready file read once). */
export function readReadyDir(dir: string): ReadyDir {
  const announcements: Announcement[] = [];
  const problems: InputError[] = [];
  let seen = 0;
  const look = (folder: string, run: string | undefined) => {
    for (const name of readdirSync(folder).sort()) {
      if (name.startsWith('.')) continue; // a trainer's temporary name, before its rename
      if (++seen > MAX_READY_FILES)
        throw new InputError({ file: dir }, `holds more than ${MAX_READY_FILES} entries: not a ready directory`);
      const path = join(folder, name);
      let isDirectory: boolean;
      try {
        isDirectory = statSync(path).isDirectory();
      } catch {
        continue; // gone between the listing and the look
      }
      if (isDirectory) {
        if (run === undefined) look(path, name);
        continue;
      }
      const step = STEP_READY.exec(name);
      const marker = MARKER_READY.exec(name);
      try {
        if (step && run !== undefined) announcements.push(readStepFile(dir, path, run, Number(step[1])));
        else if (marker) announcements.push({ file: path, ...(run === undefined ? {} : { run }), name: marker[1]! });
      } catch (error) {
        if (!(error instanceof InputError)) throw error;
        problems.push(error);
      }
    }
  };
  try {
    if (!statSync(dir).isDirectory()) throw new InputError({ file: dir }, 'not a directory of ready files');
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError({ file: dir }, 'not a directory of ready files', { cause: error });
  }
  look(dir, undefined);
  return { announcements, problems };
}

/** Where a watched entry sits, as far as matching an announcement needs. */
export interface EntryPlace {
  path: string;
  series?: string;
  step?: number;
}

/** The announcement that says `entry` is complete, if any: by its path, by its name, or by its training run and step. */
export function announcementOf(ready: ReadyDir, entry: EntryPlace): Announcement | undefined {
  const path = resolvedPath(entry.path);
  const name = basename(entry.path);
  return ready.announcements.find(
    (a) =>
      (a.path !== undefined && a.path === path) ||
      (a.name !== undefined && a.name === name && (a.run === undefined || a.run === entry.series)) ||
      (a.path === undefined && a.name === undefined && a.run === entry.series && a.step === entry.step),
  );
}
