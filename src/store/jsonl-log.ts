/**
 * Append-only JSON Lines that survive a crash: every record is one `write` of a whole line,
 * and a reader keeps only lines that end in a newline. A line cut short by a kill is
 * dropped when the log is reopened for appending, so the next record never fuses with it.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, truncateSync } from 'node:fs';
import { dirname } from 'node:path';
import { InputError } from '../errors.ts';

/** The complete records of a log (none if it does not exist yet). */
export function readJsonl<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  const records: T[] = [];
  complete.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      records.push(JSON.parse(line) as T);
    } catch (error) {
      // A whole line that does not parse was not written by us: say where, never guess.
      throw new InputError({ file, line: i + 1 }, 'not a JSON record (the run log is damaged)', { cause: error });
    }
  });
  return records;
}

export class JsonlLog<T> {
  private opened = false;

  constructor(readonly file: string) {}

  read(): T[] {
    return readJsonl<T>(this.file);
  }

  append(record: T): void {
    if (!this.opened) this.open();
    appendFileSync(this.file, `${JSON.stringify(record)}\n`);
  }

  /** Cuts a partial last line (a kill mid-write) before the first append. */
  private open(): void {
    mkdirSync(dirname(this.file), { recursive: true });
    if (existsSync(this.file)) {
      const text = readFileSync(this.file);
      const end = text.lastIndexOf(0x0a) + 1;
      if (end < text.length) truncateSync(this.file, end);
    }
    this.opened = true;
  }
}
