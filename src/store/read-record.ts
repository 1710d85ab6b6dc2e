/**
 * Reading back what a run wrote (run.json, an episode's lines, a prefix, a sample line):
 * every record is checked against its schema (src/schema/) before anything uses it. A bad
 * one is bad input (exit 2) told in one line — the file, its line where it has lines, the
 * first field that is wrong and what was found there — and nothing is written or removed
 * on the way: the run's finished work stays as it was until the file is fixed.
 */
import type { z } from 'zod';
import { describeCause, InputError, type InputLocation } from '../errors.ts';
import { readTextFile } from '../util/safe-tree.ts';

/** Text on one line: a parser's message may quote the input it stopped at, newlines and all. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ');
}

type Path = readonly PropertyKey[];

function at(value: unknown, path: Path): unknown {
  return path.reduce<unknown>((v, key) => (v as Record<PropertyKey, unknown> | null | undefined)?.[key], value);
}

/**
 * The issue to name. Where no branch of a union fits, zod says only "Invalid input" at the
 * union: the branch that got furthest into the record (the longest path, and of equal ones
 * one that found something there) is the one the record was meant to be, and its issue says
 * what is wrong with it.
 */
function namedIssue(issue: z.core.$ZodIssue, prefix: Path, value: unknown): { path: Path; message: string } {
  const path = [...prefix, ...issue.path];
  if (issue.code !== 'invalid_union') return { path, message: issue.message };
  const reach = (p: Path) => p.length + (at(value, p) === undefined ? 0 : 0.5);
  const branches = issue.errors.flatMap((branch) => (branch[0] ? [namedIssue(branch[0], path, value)] : []));
  return branches.reduce(
    (best, next) => (reach(next.path) > reach(best.path) ? next : best),
    branches[0] ?? { path, message: issue.message },
  );
}

/**
 * `value`, read from `where`, once `schema` accepts it; `what` names the record in the
 * message ("an ASAP episode line"). The value is given back as written, not as the schema
 * would rebuild it: a field a schema does not name (one a later probe added) is kept, so a
 * record written back (run.json, on resume) loses nothing.
 */
export function checkRecord<S extends z.ZodType>(schema: S, value: unknown, where: InputLocation, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return value as z.infer<S>;
  const issue = namedIssue(parsed.error.issues[0]!, [], value);
  const field = issue.path.map(String).join('.');
  const found = at(value, issue.path);
  const shown = found === undefined ? 'nothing' : (JSON.stringify(found)?.slice(0, 60) ?? String(found));
  throw new InputError(
    { ...where, ...(field ? { field } : {}) },
    oneLine(`${issue.message} (found ${shown}): not ${what} as probe writes it`),
  );
}

/** A JSON file of a run directory `root` (read through safe-tree: a regular file inside it), checked by `checkRecord`. */
export function readRecordFile<S extends z.ZodType>(file: string, schema: S, options: { root: string; what: string }): z.infer<S> {
  const text = readTextFile(file, { root: options.root, what: 'the run directory' });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError({ file }, oneLine(`not JSON (${describeCause(error)}): not ${options.what} as probe writes it`), {
      cause: error,
    });
  }
  return checkRecord(schema, value, { file }, options.what);
}
