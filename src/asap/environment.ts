/**
 * What an ASAP environment declares about its results, so that the tables of `probe asap`,
 * the rankings of `probe report`, the HTML report and the screening ladder read an
 * environment's declared columns and endings, never its name. An environment's episodes
 * run through the one loop (loop.ts) and the one run over instances (episodes.ts); this is
 * the other half of its contract: how its results are shown. The registered environments
 * are in src/environments/registry.ts, one line each.
 */
import type { z } from 'zod';
import type { EnvironmentEpisodes } from './episode-plan.ts';

/** What every environment's result for one checkpoint carries. */
export interface EnvironmentResult {
  checkpoint: string;
  runs: number;
  pass_at: Record<string, number>;
  /** Share of instances solved in all n runs (Intersection@n). */
  intersection: number;
  terminations: Record<string, number>;
  behaviour: object;
}

/** One column of an environment's results: a header, and a value shown as a share, a mean, a count or text. */
export interface Column<R> {
  header: string;
  value: (result: R) => number | string | null | undefined;
  as: 'percent' | 'mean' | 'count' | 'text';
}

export interface EnvironmentDeclaration<R extends EnvironmentResult> {
  /** `probe asap --env NAME`, `--asap-env NAME`; its key in the report's data and in `probe report --json`. */
  name: string;
  /** What it is, in a few words, for `--env`'s help: `repository tasks, tests decide`. */
  summary: string;
  /**
   * How its episodes run over checkpoints (asap/episode-plan.ts). SWE has none here: its
   * episodes are the protocol's own rung (pipeline/asap.ts: reference prefixes, the ladder's
   * Slurm stages, results under `asap`).
   */
  episodes?: EnvironmentEpisodes;
  /** The fields of one checkpoint's result that the report reads, checked before anything is ranked (report/results-schema.ts). */
  resultSchema: z.ZodType<unknown>;
  /** Its HTML report section, and its table's title in `probe report`'s rankings. */
  section: { id: string; title: string; ranking: string; whenEmpty?: string };
  /** How its episodes can end: results count every one (0 where none did). */
  terminations: readonly string[];
  /** Instances × runs, as the report writes it. */
  size(result: R): string;
  columns: {
    /** Text columns right after the checkpoint's name, everywhere (the Terminal-Bench profile). */
    leading: Column<R>[];
    /** `probe asap`'s table, after pass@k. */
    table: Column<R>[];
    /** `probe report`'s ranking, after pass@1 and ∩@n. */
    ranking: Column<R>[];
    /** The HTML report's table, after pass@1 and ∩@n. */
    report: Column<R>[];
  };
}

/** How a table shows shares and means (the terminal's tables and the HTML report differ in their blanks). */
export interface ValueFormat {
  percent(value: number): string;
  mean(value: number): string;
}

/** A column's value as text: a share as a percent, a mean to one decimal, a count as it is. */
export function showValue(value: number | string | null | undefined, as: Column<unknown>['as'], format: ValueFormat): string {
  if (typeof value !== 'number') return value === null || value === undefined ? '–' : value;
  if (as === 'percent') return format.percent(value);
  if (as === 'mean') return format.mean(value);
  return String(value);
}
