/** Plain aligned text tables for the terminal, and how they write rates and checkpoint names. */
import { basename } from 'node:path';
import { passAtKs } from '../protocol.ts';

export function formatTable(headers: string[], rows: string[][], rightAligned: number[] = []): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (rightAligned.includes(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** A rate as a percentage with one decimal; `missing` for a rate there is none of (null, or NaN from no items). */
export function formatPercent(v: number | null | undefined, missing = '-'): string {
  return v === null || v === undefined || Number.isNaN(v) ? missing : `${(100 * v).toFixed(1)}%`;
}

/** How the terminal's tables show an environment's declared columns: shares as percents, means to one decimal. */
export const TABLE_VALUES = { percent: (v: number) => formatPercent(v), mean: (v: number) => v.toFixed(1) } as const;

/** A checkpoint as tables and charts name it: its directory's base name. */
export function shortCheckpointName(checkpoint: string): string {
  return basename(checkpoint.replace(/\/+$/, '')) || checkpoint;
}

/** A checkpoint's downstream score: by its exact name, else by its directory's base name. */
export function downstreamScore(scores: ReadonlyMap<string, number>, checkpoint: string): number | undefined {
  return scores.get(checkpoint) ?? scores.get(shortCheckpointName(checkpoint));
}

/** The pass@1, pass@n (where n > 1, n the largest reported k) and ∩@n columns of an episode table. */
export function passColumns(runs: number): {
  headers: string[];
  cells: (r: { pass_at: Record<string, number>; intersection: number }) => string[];
} {
  const kMax = passAtKs(runs).at(-1) ?? 1;
  return {
    headers: ['pass@1', ...(kMax > 1 ? [`pass@${kMax}`] : []), `∩@${runs}`],
    cells: (r) => [
      formatPercent(r.pass_at['1']),
      ...(kMax > 1 ? [formatPercent(r.pass_at[String(kMax)])] : []),
      formatPercent(r.intersection),
    ],
  };
}
