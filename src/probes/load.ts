/**
 * Reads probe items from a `.jsonl` file or a directory of them, naming file, line and field
 * on bad input. A probe set is anyone's file (and `probe report` reads the one a run
 * directory names): it is read through safe-tree, so a FIFO or a device in its place is
 * refused, naming it, instead of blocking or filling memory.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../errors.ts';
import { formatOf, UnknownFormat } from '../formats/registry.ts';
import { ProbeItem } from '../schema/probe-item.ts';
import { parseJsonlRow } from '../util/jsonl-rows.ts';
import { readLines, regularFile } from '../util/safe-tree.ts';

const WHAT = 'a probe set';

export function probeFiles(pathArg: string): string[] {
  if (!existsSync(pathArg)) throw new InputError({ file: pathArg }, 'no such probe file or directory');
  if (!statSync(pathArg).isDirectory()) return [pathArg];
  // Every *.jsonl of the directory is a file of the set: one that is no regular file is refused, not skipped.
  const files = readdirSync(pathArg)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(pathArg, f));
  for (const file of files) regularFile(file, { maxBytes: Number.POSITIVE_INFINITY, what: WHAT });
  if (files.length === 0) throw new InputError({ file: pathArg }, 'directory holds no *.jsonl probe files');
  return files;
}

export function loadProbeItems(pathArg: string): ProbeItem[] {
  const items: ProbeItem[] = [];
  const seen = new Map<string, string>();
  for (const file of probeFiles(pathArg)) {
    for (const { text, line } of readLines(file, { what: WHAT })) {
      if (text.trim() === '') continue;
      const item = parseJsonlRow(text, ProbeItem, file, line);
      // A format probe does not know would be sampled with a guessed stop and parsed by nothing: refused here.
      try {
        formatOf(item.format);
      } catch (error) {
        if (!(error instanceof UnknownFormat)) throw error;
        throw new InputError({ file, line, field: 'format' }, error.message, { cause: error });
      }
      const where = `${file}:${line}`;
      const earlier = seen.get(item.id);
      if (earlier) throw new InputError({ file, line, field: 'id' }, `"${item.id}" already used at ${earlier}`);
      seen.set(item.id, where);
      items.push(item);
    }
  }
  if (items.length === 0) throw new InputError({ file: pathArg }, 'no probe items');
  return items;
}
