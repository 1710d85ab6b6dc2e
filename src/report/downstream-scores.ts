/**
 * Downstream scores as a user gives them (`--scores`, `--downstream`): `checkpoint,score`
 * rows of a CSV file. Read in one place, so that `probe correlate` and `probe report`
 * refuse the same bad rows with the same words; a checkpoint's score is looked up by
 * `downstreamScore` (table.ts).
 */
import { InputError } from '../errors.ts';
import { readInputText } from '../util/safe-tree.ts';

/** `checkpoint,score` rows (a header row is skipped when its score is not a number). */
export function readScores(file: string): Map<string, number> {
  const text = readInputText(file, '--scores', 'scores');
  const scores = new Map<string, number>();
  text.split('\n').forEach((row, i) => {
    if (!row.trim()) return;
    const cells = row.split(',').map((c) => c.trim());
    const value = Number(cells[cells.length - 1]);
    if (cells.length < 2 || !Number.isFinite(value)) {
      if (i === 0) return;
      throw new InputError({ file, line: i + 1 }, `expected "checkpoint,score", got ${JSON.stringify(row)}`);
    }
    scores.set(cells.slice(0, -1).join(','), value);
  });
  if (scores.size === 0) throw new InputError({ file }, 'no scores');
  return scores;
}
