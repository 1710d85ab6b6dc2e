/** Reads probe items from a `.jsonl` file or a directory of them, naming file, line and field on bad input. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describeCause, InputError } from '../errors.ts';
import { formatOf, UnknownFormat } from '../formats/registry.ts';
import { ProbeItem } from '../schema/probe-item.ts';

export function probeFiles(pathArg: string): string[] {
  if (!existsSync(pathArg)) throw new InputError({ file: pathArg }, 'no such probe file or directory');
  if (!statSync(pathArg).isDirectory()) return [pathArg];
  const files = readdirSync(pathArg)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()
    .map((f) => join(pathArg, f));
  if (files.length === 0) throw new InputError({ file: pathArg }, 'directory holds no *.jsonl probe files');
  return files;
}

export function loadProbeItems(pathArg: string): ProbeItem[] {
  const items: ProbeItem[] = [];
  const seen = new Map<string, string>();
  for (const file of probeFiles(pathArg)) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, index) => {
        const line = index + 1;
        if (text.trim() === '') return;
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (error) {
          throw new InputError({ file, line }, `not valid JSON: ${describeCause(error)}`, { cause: error });
        }
        const parsed = ProbeItem.safeParse(value);
        if (!parsed.success) {
          const issue = parsed.error.issues[0]!;
          throw new InputError({ file, line, field: issue.path.join('.') || undefined }, issue.message);
        }
        // A format probe does not know would be sampled with a guessed stop and parsed by nothing: refused here.
        try {
          formatOf(parsed.data.format);
        } catch (error) {
          if (!(error instanceof UnknownFormat)) throw error;
          throw new InputError({ file, line, field: 'format' }, error.message, { cause: error });
        }
        const where = `${file}:${line}`;
        const earlier = seen.get(parsed.data.id);
        if (earlier) throw new InputError({ file, line, field: 'id' }, `"${parsed.data.id}" already used at ${earlier}`);
        seen.set(parsed.data.id, where);
        items.push(parsed.data);
      });
  }
  if (items.length === 0) throw new InputError({ file: pathArg }, 'no probe items');
  return items;
}
