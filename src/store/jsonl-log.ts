/**
 * Append-only JSON Lines that survive a crash: every record is one `write` of a whole line,
 * and a reader keeps only lines that end in a newline and parse. A last line cut short or
 * garbled by a kill or a power loss is dropped when the log is reopened for appending, so
 * the next record never fuses with it. Numbers JSON cannot hold (NaN, ±Infinity: the
 * log-likelihood of an impossible token) are written tagged and read back exactly.
 *
 * A log lives in a run directory someone may hand over to be resumed or reported: it is
 * read through safe-tree (a regular file really inside `root`, at most TREE_LIMITS.fileBytes),
 * and appended to only as a regular file in a directory inside `root`, never through a link.
 * Given the schema of its records, a log checks every line it reads back against it
 * (store/read-record.ts): a line of another shape is bad input naming the file, the line and
 * the field, and the log is left as it is.
 */
import { closeSync, mkdirSync, realpathSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import type { z } from 'zod';
import { ProbeError, InputError } from '../errors.ts';
import { interruptedBy } from '../util/interrupt.ts';
import { isInside, openAppend, readRegularFileIfPresent, TREE_LIMITS } from '../util/safe-tree.ts';
import { decode, encode } from '../util/tagged-numbers.ts';
import { checkRecord } from './read-record.ts';

/** What a log's lines are: their schema, and how a message names one ("an ASAP episode line"). */
export interface LogRecords<T> {
  schema: z.ZodType<T>;
  what: string;
}

export function toJsonLine(record: unknown): string {
  return `${JSON.stringify(record, encode)}\n`;
}

/** The records of a log's text, and the byte length of its intact part (everything after it is a damaged tail). */
function parse<T>(file: string, text: Buffer, shape?: LogRecords<T>): { records: T[]; intact: number } {
  const records: T[] = [];
  let start = 0;
  let line = 0;
  while (start < text.length) {
    const end = text.indexOf(0x0a, start);
    line++;
    if (end < 0) break; // no newline: cut short
    const body = text.subarray(start, end).toString('utf8');
    if (body.trim()) {
      let record: unknown;
      try {
        record = JSON.parse(body, decode);
      } catch (error) {
        // Only the last line can be a crash's leftover; a bad line with records after it was not written by us.
        if (end + 1 >= text.length) break;
        throw new InputError({ file, line }, 'not a JSON record (the run log is damaged)', { cause: error });
      }
      // A crash cuts a line short, which never leaves JSON: a whole record of the wrong shape was written so.
      records.push(shape ? checkRecord(shape.schema, record, { file, line }, shape.what) : (record as T));
    }
    start = end + 1;
  }
  return { records, intact: start };
}

/** A log's bytes, or undefined where there is none yet (see the top of this file). */
function readLog(file: string, root: string): Buffer | undefined {
  return readRegularFileIfPresent(file, { root, maxBytes: TREE_LIMITS.fileBytes, what: 'the run directory' });
}

/**
 * The complete records of a log (none if it does not exist yet); `root`: the run directory
 * it must be inside; `shape`: their schema, which every line read must fit.
 */
export function readJsonl<T>(file: string, root = dirname(file), shape?: LogRecords<T>): T[] {
  const text = readLog(file, root);
  return text ? parse<T>(file, text, shape).records : [];
}

/**
 * Test-only (tests that kill a run and resume it; never set in real use):
 * PROBE_TEST_KILL_AFTER_APPENDS=N, or PATH:N to count only logs whose path ends in /PATH,
 * makes the process SIGKILL itself right after its Nth append, so the test knows exactly
 * what was saved instead of racing a kill against a poll.
 */
const killAfter = /^(?:(.+):)?([1-9]\d*)$/.exec(process.env.PROBE_TEST_KILL_AFTER_APPENDS ?? '');
let appends = 0;

function afterAppend(file: string): void {
  if (!killAfter || (killAfter[1] && !`${sep}${file}`.endsWith(`${sep}${killAfter[1]}`))) return;
  if (++appends === Number(killAfter[2])) process.kill(process.pid, 'SIGKILL');
}

export class JsonlLog<T> {
  private opened = false;
  /** What the last read found: the intact length and the file's length, so the first append need not read again. */
  private lastRead: { intact: number; length: number } | undefined;

  /** `root`: the run directory the log must stay inside (its own directory where not given); `shape`: the schema its lines must fit. */
  constructor(
    readonly file: string,
    private readonly root = dirname(file),
    private readonly shape?: LogRecords<T>,
  ) {}

  read(): T[] {
    const text = readLog(this.file, this.root);
    if (!text) return [];
    const { records, intact } = parse<T>(this.file, text, this.shape);
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
    const fd = openAppend(this.file);
    try {
      writeFileSync(fd, toJsonLine(record));
    } finally {
      closeSync(fd);
    }
    afterAppend(this.file);
  }

  /** Cuts a damaged tail (a kill mid-write) before the first append; a log's directory must really be inside the root. */
  private open(): void {
    const dir = dirname(this.file);
    mkdirSync(dir, { recursive: true });
    const [real, root] = [realpathSync(dir), realpathSync(this.root)];
    if (!isInside(real, root))
      throw new InputError(
        { file: resolve(dir) },
        `leads to ${real}, outside the run directory (${root}): a log is written only inside it`,
      );
    if (!this.lastRead) this.read();
    if (this.lastRead && this.lastRead.intact < this.lastRead.length) truncateSync(this.file, this.lastRead.intact);
    this.opened = true;
  }
}
