/**
 * How many actions each probe item's trajectory has, where its file can still be read: the
 * probe item records only T*'s index, and where T* falls in the run (early, or just before
 * the end) is part of what a probe set measures.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ProbeItem } from '../schema/probe-item.ts';
import { importTrajectory } from '../trajectories/import.ts';

/**
 * `source.file` is relative to the directory above the trajectories (`probe build` writes it
 * so): each root is tried in turn. Rows of a dataset file (`FILE#INDEX`) are not re-read; an
 * unreadable file is simply unknown, since this only informs a report.
 */
export function trajectoryLengths(items: readonly ProbeItem[], roots: readonly string[]): Map<string, number> {
  const lengths = new Map<string, number>();
  for (const file of new Set(items.map((i) => i.source.file))) {
    if (file.includes('#')) continue;
    const path = roots.map((root) => resolve(root, file)).find((p) => existsSync(p) && statSync(p).isFile());
    if (!path) continue;
    try {
      lengths.set(file, importTrajectory(path).steps.length);
    } catch {
      // Moved, edited or not a trajectory any more: its length is unknown, and the report says how many are.
    }
  }
  return lengths;
}
