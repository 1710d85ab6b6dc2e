/**
 * Refuses an id seen before, saying where it first appeared. Results are keyed by id —
 * memoised episodes, probe items, transcripts — so two records with one id would share one
 * result and count it twice (or overwrite each other's files).
 */
import { InputError, type InputLocation } from '../errors.ts';

/** Where a record is, as an error names it: `file:line`, or `file` and a row. */
export function describeLocation(at: InputLocation, row?: number): string {
  return at.line !== undefined ? `${at.file}:${at.line}` : row !== undefined ? `${at.file} (row ${row + 1})` : at.file;
}

export class UniqueIds {
  private readonly seen = new Map<string, string>();

  /** `field` is the id's field in the records (`query_id`, `instance_id`, `id`). */
  constructor(private readonly field: string) {}

  /** Records `id` found at `at` (`row`: its 0-based position where the file has no lines). */
  add(id: string, at: InputLocation, row?: number): void {
    const earlier = this.seen.get(id);
    const where = describeLocation(at, row);
    if (earlier !== undefined)
      throw new InputError(
        { file: at.file, line: at.line, field: this.field },
        `${row !== undefined && at.line === undefined ? `row ${row + 1}: ` : ''}${JSON.stringify(id)} is used twice: first at ${earlier}`,
      );
    this.seen.set(id, where);
  }
}
