/** Input files of JSON lines (a research set's corpus and queries, an environment's instances), every row checked before any work. */
import type { z } from 'zod';
import { describeCause, InputError } from '../errors.ts';
import { MAX_STRING_BYTES, readTextFile } from './safe-tree.ts';

/** The JSON rows of a JSONL file, each checked with `schema`, naming file, line and field on bad input. */
export function readJsonlRows<T>(file: string, schema: z.ZodType<T>, what: string): Array<{ row: T; line: number }> {
  let text: string;
  try {
    // A regular file only (a FIFO would block, a device never end), at most one string's worth.
    text = readTextFile(file, { maxBytes: MAX_STRING_BYTES, what });
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError({ file }, `cannot read: ${describeCause(error)}`, { cause: error });
  }
  const rows: Array<{ row: T; line: number }> = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const line = index + 1;
    rows.push({ row: parseJsonlRow(raw, schema, file, line), line });
  });
  if (rows.length === 0) throw new InputError({ file }, 'holds no rows');
  return rows;
}

/** One line of a JSONL file as `schema` reads it, or an InputError naming the file, line and first bad field. */
export function parseJsonlRow<T>(raw: string, schema: z.ZodType<T>, file: string, line: number): T {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new InputError({ file, line }, `not valid JSON: ${describeCause(error)}`, { cause: error });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError({ file, line, field: issue.path.join('.') || undefined }, issue.message);
  }
  return parsed.data;
}
