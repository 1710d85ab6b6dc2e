/**
 * Bringing an events file up to date with the content it must hold: where the file on disk
 * is a prefix of it (the usual case: new checkpoints after the last one written), only the
 * rest is appended, so a TensorBoard tailing the file sees the new points; otherwise (a
 * point landed before ones already written, a torn last record after a kill, a file from
 * something else) it is rewritten whole, atomically.
 */
import { appendFileSync, readFileSync, statSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic-file.ts';

export type EventsFileUpdate = 'created' | 'unchanged' | 'appended' | 'rewritten';

export function updateEventsFile(file: string, content: Buffer): EventsFileUpdate {
  const size = statSync(file, { throwIfNoEntry: false })?.size;
  if (size !== undefined && size <= content.length) {
    const present = readFileSync(file);
    if (present.equals(content.subarray(0, present.length))) {
      if (present.length === content.length) return 'unchanged';
      appendFileSync(file, content.subarray(present.length));
      return 'appended';
    }
  }
  // The temporary file's name holds no `tfevents`: TensorBoard reads every file named so, and would take one listed mid-write for a second copy.
  writeFileAtomic(file, content, { tmpStem: '.probe-events' });
  return size === undefined ? 'created' : 'rewritten';
}
