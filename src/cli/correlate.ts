/** `probe correlate`: how well each probe metric ranks checkpoints against downstream scores. */
import { Command } from 'commander';
import { describeCause, InputError } from '../errors.ts';
import { downstreamScore, formatTable } from '../report/table.ts';
import { bootstrap, kendallTauB, pearson, spearman, type Interval } from '../stats/correlation.ts';
import { MetricDocumentSchema } from '../schema/metric-documents.ts';
import { metricsFromDocument, type MetricSeries } from '../stats/metrics.ts';
import { checkRecord } from '../store/read-record.ts';
import { createRng } from '../util/rng.ts';
import { integer, positiveInteger } from './args.ts';
import { checkpointFacts } from '../backends/checkpoint.ts';
import { MAX_STRING_BYTES, readTextFile } from '../util/safe-tree.ts';

interface CorrelateFlags {
  results: string[];
  scores: string;
  resamples: number;
  seed: number;
  json?: boolean;
  includeControls?: boolean;
}

/** `checkpoint,score` rows (a header row is skipped when its score is not a number). */
export function readScores(file: string): Map<string, number> {
  let text: string;
  try {
    text = readTextFile(file, { maxBytes: MAX_STRING_BYTES, what: '--scores' });
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError({ file }, `cannot read scores: ${describeCause(error)}`, { cause: error });
  }
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

interface Row {
  metric: string;
  checkpoints: number;
  spearman: number;
  kendall: number;
  pearson: number;
  spearman_ci_checkpoints: Interval;
  spearman_ci_items: Interval;
}

function correlateMetric(
  series: MetricSeries,
  scores: Map<string, number>,
  resamples: number,
  seed: number,
  includeControls: boolean,
): Row | undefined {
  // A control has seen the probes: its point would show a correlation the probes did not earn.
  const names = [...series.items.keys()].filter(
    (c) => downstreamScore(scores, c) !== undefined && (includeControls || !checkpointFacts(c).control),
  );
  if (names.length < 2) return undefined;
  const metric = (items: Map<string, unknown[]>, ckpts: string[]) => ckpts.map((c) => series.aggregate(items.get(c)!));
  const y = names.map((c) => downstreamScore(scores, c)!);
  const x = metric(series.items, names);
  const overCheckpoints = bootstrap(
    names.map((_c, i) => ({ x: x[i]!, y: y[i]! })),
    (s) =>
      spearman(
        s.map((p) => p.x),
        s.map((p) => p.y),
      ),
    createRng('correlate', seed, series.name, 'ckpt'),
    resamples,
  );
  // Over items: resample the item indices (the same items for every checkpoint) and recompute each metric.
  const itemCount = Math.min(...names.map((c) => series.items.get(c)!.length));
  const overItems = bootstrap(
    Array.from({ length: itemCount }, (_, i) => i),
    (idx) => {
      const resampled = new Map(names.map((c) => [c, idx.map((i) => series.items.get(c)![i])]));
      return spearman(metric(resampled, names), y);
    },
    createRng('correlate', seed, series.name, 'items'),
    resamples,
  );
  return {
    metric: series.name,
    checkpoints: names.length,
    spearman: spearman(x, y),
    kendall: kendallTauB(x, y),
    pearson: pearson(x, y),
    spearman_ci_checkpoints: overCheckpoints,
    spearman_ci_items: overItems,
  };
}

export function correlateCommand(): Command {
  return new Command('correlate')
    .description('Spearman, Kendall and Pearson of each probe metric against downstream scores, with bootstrap 95% intervals.')
    .requiredOption('--results <files...>', 'JSON printed by probe bpb|mcq|passk --json')
    .requiredOption('--scores <file.csv>', '"checkpoint,score" rows, e.g. post-trained SWE-bench pass@1')
    .option('--resamples <n>', 'bootstrap resamples', positiveInteger, 2000)
    .option('--seed <n>', 'bootstrap seed', integer, 0)
    .option('--include-controls', 'correlate controls (config.json probe_ladder.control: checkpoints that have seen the probes) too')
    .option('--json', 'print one JSON document on stdout')
    .addHelpText('after', '\nExample:\n  probe bpb --json > bpb.json && probe correlate --results bpb.json --scores swebench.csv')
    .action((flags: CorrelateFlags) => {
      const scores = readScores(flags.scores);
      const series = flags.results.flatMap((file) => {
        let doc: unknown;
        const text = readTextFile(file, { maxBytes: MAX_STRING_BYTES, what: '--results' });
        try {
          doc = JSON.parse(text);
        } catch (error) {
          throw new InputError({ file }, `not a probe --json document: ${describeCause(error)}`, { cause: error });
        }
        const found = metricsFromDocument(checkRecord(MetricDocumentSchema, doc, { file }, 'a probe --json document'));
        if (found.length === 0) throw new InputError({ file, field: 'results' }, 'no bpb, mcq or passk results in this document');
        return found;
      });
      const rows = series
        .map((s) => correlateMetric(s, scores, flags.resamples, flags.seed, Boolean(flags.includeControls)))
        .filter((r): r is Row => r !== undefined);
      const fewest = Math.min(...rows.map((r) => r.checkpoints));
      const warning =
        fewest < 5
          ? `only ${fewest} checkpoints with downstream scores: rank correlations over fewer than 5 checkpoints are not meaningful`
          : null;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ correlations: rows, warning }, null, 2)}\n`);
        return;
      }
      if (warning) process.stderr.write(`probe: WARNING: ${warning}\n`);
      const ci = (i: Interval) => `[${i.low.toFixed(2)}, ${i.high.toFixed(2)}]`;
      process.stderr.write(
        `${formatTable(
          ['metric', 'ckpts', 'spearman', '95% CI (ckpts)', '95% CI (items)', 'kendall', 'pearson'],
          rows.map((r) => [
            r.metric,
            String(r.checkpoints),
            r.spearman.toFixed(3),
            ci(r.spearman_ci_checkpoints),
            ci(r.spearman_ci_items),
            r.kendall.toFixed(3),
            r.pearson.toFixed(3),
          ]),
          [1, 2, 5, 6],
        )}\n`,
      );
    });
}
