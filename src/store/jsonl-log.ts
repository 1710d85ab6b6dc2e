/**
 * Append-only JSON Lines that survive a crash: every record is one `write` of a whole line,
 * and a reader keeps only lines that end in a newline and parse. A last line cut short or
 * garbled by a kill or a power loss is dropped when the log is reopened for appending, so
 * the next record never fuses with it. Numbers JSON cannot hold (NaN, ±Infinity: the
 * log-likelihood of an impossible token) are written tagged and read back exactly.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { dirname } from 'node:path';
import { ProbeError, InputError } from '../errors.ts';
import { interruptedBy } from '../util/interrupt.ts';
import { decode, encode } from '../util/tagged-numbers.ts';

export function toJsonLine(record: unknown): string {
  return `${JSON.stringify(record, encode)}\n`;
}

/** The records of a log's text, and the byte length of its intact part (everything after it is a damaged tail). */
function parse<T>(file: string, text: Buffer): { records: T[]; intact: number } {
  const records: T[] = [];
  let start = 0;
  let line = 0;
  while (start < text.length) {
    const end = text.indexOf(0x0a, start);
    line++;
    if (end < 0) break; // no newline: cut short
    const body = text.subarray(start, end).toString('utf8');
    if (body.trim()) {
      try {
        records.push(JSON.parse(body, decode) as T);
      } catch (error) {
        // Only the last line can be a crash's leftover; a bad line with records after it was not written by us.
        if (end + 1 >= text.length) break;
        throw new InputError({ file, line }, 'not a JSON record (the run log is damaged)', { cause: error });
      }
    }
    start = end + 1;
  }
  return { records, intact: start };
}

/** The complete records of a log (none if it does not exist yet). */
export function readJsonl<T>(file: string): T[] {
  return existsSync(file) ? parse<T>(file, readFileSync(file)).records : [];
}

export class JsonlLog<T> {
  private opened = false;
  /** What the last read found: the intact length and the file's length, so the first append need not read again. */
  private lastRead: { intact: number; length: number } | undefined;

  constructor(readonly file: string) {}

  read(): T[] {
    if (!existsSync(this.file)) return [];
    const text = readFileSync(this.file);
    const { records, intact } = parse<T>(this.file, text);
    this.lastRead = { intact, length: text.length };
    return records;
  }

  /** Starts the log afresh: whatever the file held is gone. */
  reset(): void {
    rmSync(this.file, { force: true });
    this.lastRead = undefined;
  }

  append(record: T): void {
    // Work finished while the process is shutting down may have been cut short by it: never keep it.
    const signal = interruptedBy();
    if (signal) throw new ProbeError(`interrupted by ${signal}: not saving a result finished during shutdown (rerun with --resume)`);
    if (!this.opened) this.open();
    appendFileSync(this.file, toJsonLine(record));
  }

  /** Cuts a damaged tail (a kill mid-write) before the first append. */
  private open(): void {
    mkdirSync(dirname(this.file), { recursive: true });
    if (!this.lastRead && existsSync(this.file)) this.read();
    if (this.lastRead && this.lastRead.intact < this.lastRead.length) truncateSync(this.file, this.lastRead.intact);
    this.opened = true;
  }
}
