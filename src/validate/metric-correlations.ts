/**
 * `probe correlate`: how well each probe metric of finished runs (their --json documents)
 * ranks checkpoints against downstream scores. The interval over checkpoints is the
 * study's own (correlate.ts); the one over items resamples the same items for every
 * checkpoint, which a document of per-item results allows.
 */
import { checkpointFacts } from '../backends/checkpoint.ts';
import { describeCause, InputError } from '../errors.ts';
import { readScores } from '../report/downstream-scores.ts';
import { downstreamScore } from '../report/table.ts';
import { MetricDocumentSchema } from '../schema/metric-documents.ts';
import { bootstrap, kendallTauB, pearson, spearman, type Interval } from '../stats/correlation.ts';
import { metricsFromDocument, type MetricSeries } from '../stats/metrics.ts';
import { checkRecord } from '../store/read-record.ts';
import { createRng } from '../util/rng.ts';
import { MAX_STRING_BYTES, readTextFile } from '../util/safe-tree.ts';
import { spearmanOverCheckpoints } from './correlate.ts';

export interface MetricCorrelation {
  metric: string;
  checkpoints: number;
  spearman: number;
  kendall: number;
  pearson: number;
  spearman_ci_checkpoints: Interval;
  spearman_ci_items: Interval;
}

export interface MetricCorrelations {
  correlations: MetricCorrelation[];
  /** Said when too few checkpoints have downstream scores for a rank correlation to mean anything. */
  warning: string | null;
}

export interface CorrelateSettings {
  resamples: number;
  seed: number;
  /** Correlate controls too (by default left out: a control has seen the probes). */
  includeControls: boolean;
}

/** The metric series of one probe --json document, checked against its schema. */
function readMetricDocument(file: string): MetricSeries[] {
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
}

function correlateMetric(series: MetricSeries, scores: Map<string, number>, settings: CorrelateSettings): MetricCorrelation | undefined {
  const { resamples, seed, includeControls } = settings;
  // A control has seen the probes: its point would show a correlation the probes did not earn.
  const names = [...series.items.keys()].filter(
    (c) => downstreamScore(scores, c) !== undefined && (includeControls || !checkpointFacts(c).control),
  );
  if (names.length < 2) return undefined;
  const metric = (items: Map<string, unknown[]>, ckpts: string[]) => ckpts.map((c) => series.aggregate(items.get(c)!));
  const y = names.map((c) => downstreamScore(scores, c)!);
  const x = metric(series.items, names);
  const overCheckpoints = spearmanOverCheckpoints(x, y, createRng('correlate', seed, series.name, 'ckpt'), resamples);
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

/** Every metric of the `results` documents against the `scores` CSV; all input is read before any statistic. */
export function correlateMetrics(results: readonly string[], scoresFile: string, settings: CorrelateSettings): MetricCorrelations {
  const scores = readScores(scoresFile);
  const series = results.flatMap(readMetricDocument);
  const correlations = series.map((s) => correlateMetric(s, scores, settings)).filter((r): r is MetricCorrelation => r !== undefined);
  const fewest = Math.min(...correlations.map((r) => r.checkpoints));
  const warning =
    fewest < 5
      ? `only ${fewest} checkpoints with downstream scores: rank correlations over fewer than 5 checkpoints are not meaningful`
      : null;
  return { correlations, warning };
}
