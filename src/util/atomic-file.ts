/** Files written whole or not at all: a temporary file beside the target, then a rename. */
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * `tmpStem` names the temporary file instead of the target's name, where a reader takes any
 * file named like the target for one (TensorBoard reads every name holding `tfevents`, and
 * would read a temporary file listed mid-write as a second copy).
 */
export function writeFileAtomic(file: string, text: string | Uint8Array, options: { tmpStem?: string } = {}): void {
  mkdirSync(dirname(file), { recursive: true });
  // pid and a random part: two writers of one file (processes, or concurrent calls) never share a temp file.
  const tmp = join(dirname(file), `${options.tmpStem ?? basename(file)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`);
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  } catch (error) {
    // A write or rename that failed (a full disk, a directory in the target's place) leaves nothing of its own behind.
    rmSync(tmp, { force: true });
    throw error;
  }
}
