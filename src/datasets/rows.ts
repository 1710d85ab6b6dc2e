/**
 * Rows of a published dataset file, one at a time: JSONL (streamed line by line), JSON (an
 * array of rows, or an object holding one under `rows`/`data`/`instances`) and Parquet
 * (streamed one row group at a time with hyparquet, so a file of gigabytes never sits in
 * memory whole). Values come back as JSON would have them: Parquet's 64-bit integers become
 * numbers when exact, strings otherwise.
 *
 * A dataset is a third party's file: every format is read through safe-tree from one
 * descriptor checked to be a regular file (a FIFO or a device is refused, naming it, before
 * anything blocks), and a JSON Lines line or a JSON document has safe-tree's cap on one string.
 */
import { closeSync, readSync } from 'node:fs';
import { type AsyncBuffer, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { describeCause, InputError } from '../errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../util/json-depth.ts';
import { MAX_STRING_BYTES, openRegularFile, readLines, readTextFile, regularFile } from '../util/safe-tree.ts';

const WHAT = 'a dataset file';

export type Row = Record<string, unknown>;

export interface DatasetRow {
  row: Row;
  /** 0-based position of the row in the file. */
  index: number;
  /** 1-based line, for JSONL. */
  line?: number;
  /**
   * Set, with an empty `row`, when the row cannot be read safely (it nests too deeply), and
   * only for a reader that asked for `problems: 'yield'`; otherwise such a row is thrown.
   */
  problem?: InputError;
}

export interface ReadRowsOptions {
  /** Parquet only (other formats return whole rows): the columns to read. */
  columns?: string[];
  /**
   * `throw` (the default): a row that cannot be read safely ends the file with its error;
   * `yield`: it comes back with its `problem`, and the rows after it still do (a trajectory
   * dataset whose good rows must build beside a bad one).
   */
  problems?: 'throw' | 'yield';
}

export const DATASET_EXTENSIONS = ['.jsonl', '.json', '.parquet'] as const;

export function isDatasetFile(path: string): boolean {
  return DATASET_EXTENSIONS.some((ext) => path.endsWith(ext));
}

/** Keys under which a JSON document holds its list of rows. */
const ROW_LIST_KEYS = ['rows', 'data', 'instances'];

function asRow(value: unknown, file: string, line?: number): Row {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InputError(
      { file, line },
      `expected a row object, got ${Array.isArray(value) ? 'an array' : value === null ? 'null' : typeof value}`,
    );
  }
  return value as Row;
}

/**
 * A row as read, or with its problem: too deep a row would overflow the stack of whatever
 * reads it next (JSON.stringify, zod), so it is refused before anything does.
 */
function checkedRow(value: unknown, file: string, index: number, line: number | undefined, problems: 'throw' | 'yield'): DatasetRow {
  if (!nestsDeeperThan(value)) return { row: asRow(value, file, line), index, ...(line === undefined ? {} : { line }) };
  const problem = new InputError(
    { file, line },
    `${line === undefined ? `row ${index + 1}: ` : ''}nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; not read`,
  );
  if (problems === 'throw') throw problem;
  return { row: {}, index, ...(line === undefined ? {} : { line }), problem };
}

async function* jsonlRows(file: string, problems: 'throw' | 'yield'): AsyncGenerator<DatasetRow> {
  let index = 0;
  for (const { text, line } of readLines(file, { what: WHAT })) {
    if (!text.trim()) continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new InputError({ file, line }, `not valid JSON: ${describeCause(error)}`, { cause: error });
    }
    yield checkedRow(value, file, index++, line, problems);
  }
}

function* jsonRows(file: string, problems: 'throw' | 'yield'): Generator<DatasetRow> {
  let value: unknown;
  try {
    value = JSON.parse(readTextFile(file, { maxBytes: MAX_STRING_BYTES, what: WHAT }));
  } catch (error) {
    throw new InputError({ file }, `not valid JSON: ${describeCause(error)}`, { cause: error });
  }
  const key = Array.isArray(value) ? undefined : ROW_LIST_KEYS.find((k) => Array.isArray((value as Row | null)?.[k]));
  const list = Array.isArray(value) ? value : key ? ((value as Row)[key] as unknown[]) : [value];
  for (const [index, item] of list.entries()) yield checkedRow(item, file, index, undefined, problems);
}

/** Parquet's INT64 as JSON has it: a number when exact, else its decimal string. */
function jsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (Array.isArray(value)) return value.map(jsonValue);
  if (value instanceof Date || value instanceof Uint8Array) return value;
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonValue(v)]));
  return value;
}

/**
 * A Parquet file as hyparquet reads it (its footer, then row group by row group), from one
 * descriptor safe-tree checked: hyparquet's own `asyncBufferFromFile` opens the path again
 * for every slice. `close` releases the descriptor.
 */
export function parquetFile(file: string): AsyncBuffer & { close(): void } {
  const { fd, size } = openRegularFile(file, { what: WHAT });
  return {
    byteLength: size,
    slice(start: number, end = size): ArrayBuffer {
      const bytes = new Uint8Array(Math.max(0, Math.min(end, size) - start));
      for (let at = 0; at < bytes.length; ) {
        const n = readSync(fd, bytes, at, bytes.length - at, start + at);
        if (n === 0) throw new InputError({ file }, `shrank while being read (${start + at} of ${size} bytes)`);
        at += n;
      }
      return bytes.buffer;
    },
    close: () => closeSync(fd),
  };
}

async function* parquetRows(file: string, problems: 'throw' | 'yield', columns?: string[]): AsyncGenerator<DatasetRow> {
  const buffer = parquetFile(file);
  try {
    yield* parquetRowsOf(buffer, file, problems, columns);
  } finally {
    buffer.close();
  }
}

async function* parquetRowsOf(
  buffer: AsyncBuffer,
  file: string,
  problems: 'throw' | 'yield',
  columns?: string[],
): AsyncGenerator<DatasetRow> {
  let metadata: Awaited<ReturnType<typeof parquetMetadataAsync>>;
  try {
    metadata = await parquetMetadataAsync(buffer);
  } catch (error) {
    throw new InputError({ file }, `not a readable Parquet file: ${describeCause(error)}`, { cause: error });
  }
  const present = new Set(metadata.schema.slice(1).map((s) => s.name));
  const wanted = columns?.filter((c) => present.has(c));
  let rowStart = 0;
  for (const group of metadata.row_groups) {
    const rowEnd = rowStart + Number(group.num_rows);
    let rows: Row[];
    try {
      rows = await parquetReadObjects({ file: buffer, metadata, rowStart, rowEnd, compressors, ...(wanted ? { columns: wanted } : {}) });
    } catch (error) {
      throw new InputError({ file }, `cannot read rows ${rowStart}–${rowEnd - 1}: ${describeCause(error)}`, { cause: error });
    }
    // Depth first: jsonValue recurses.
    for (const [i, row] of rows.entries())
      yield nestsDeeperThan(row)
        ? checkedRow(row, file, rowStart + i, undefined, problems)
        : { row: jsonValue(row) as Row, index: rowStart + i };
    rowStart = rowEnd;
  }
}

/**
 * Every row of a dataset file, in order. `columns` (Parquet only; other formats return
 * whole rows) skips the columns a caller does not need, which for trajectory datasets are
 * most of the bytes; `problems` says what a row that cannot be read safely does.
 */
export function readRows(file: string, options: ReadRowsOptions = {}): AsyncGenerator<DatasetRow> {
  // A FIFO or a device is refused here, naming it; a directory is no dataset file.
  if (regularFile(file, { maxBytes: Number.POSITIVE_INFINITY, what: WHAT }) === undefined)
    throw new InputError({ file }, 'no such dataset file');
  const problems = options.problems ?? 'throw';
  if (file.endsWith('.parquet')) return parquetRows(file, problems, options.columns);
  if (file.endsWith('.jsonl')) return jsonlRows(file, problems);
  if (file.endsWith('.json'))
    return (async function* () {
      yield* jsonRows(file, problems);
    })();
  throw new InputError({ file }, `not a dataset file (expected ${DATASET_EXTENSIONS.join(', ')})`);
}

/** All rows of a (small) dataset file, e.g. task records. */
export async function readAllRows(file: string): Promise<DatasetRow[]> {
  const rows: DatasetRow[] = [];
  for await (const row of readRows(file)) rows.push(row);
  return rows;
}
