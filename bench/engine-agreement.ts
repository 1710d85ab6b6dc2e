/**
 * Engine agreement: whether llama.cpp's llama-server samples from the same distribution as
 * probe's in-process ONNX sampler on the same weights (the s1500 checkpoint as an ONNX
 * directory and as a float32 GGUF file, served by the llama-server probe starts). Two
 * workloads, each engine opened once and drawing every workload's samples (in process
 * first, then llama.cpp, so neither slows the other); temperature 0.7, top-p 0.95, seed 0:
 *
 * - probes: n samples of each of the first K demo probe items, as pass@K asks for them (the
 *   item's stops, ≤ 128 new tokens); per engine and per item it reports sample length (UTF-8
 *   bytes, tokens), the share that parses as an action, how samples end, and speed. On these
 *   weights no sample parses or reaches its item's stop, so this tests neither;
 * - code: n samples of each of the first K contexts of ../shared/models/reference-items.json
 *   (the agent-trajectory contexts that file holds, not bare code), with the stops "\n\n",
 *   "\ndef " and "\nclass " (≤ 96 new tokens), which samples reach often: how a sample ends
 *   (by which stop string, end of text, length, error) and its length up to the stop (bytes,
 *   tokens).
 *
 * For each workload, the difference llama.cpp − in process with a 95% interval and a verdict
 * per metric ("consistent": the interval contains 0).
 *
 * Intervals: a mean's is a percentile bootstrap that resamples each engine's samples within
 * each item (items fixed: both engines see the same prompts); a share's is Wilson's; a
 * difference's is that bootstrap's, the two engines resampled independently.
 *
 * llama.cpp cannot return a sample whose bytes are not valid UTF-8 (HTTP 500): such a
 * sample comes back as an `error` sample with no text. The in-process sampler returns the
 * same kind of sample with U+FFFD in its text, so "not valid UTF-8" is counted on both
 * (in process: the sampled tokens' bytes, EOS left out, do not decode as UTF-8), and the
 * probes' length and parse rate are compared with and without those samples.
 *
 * PROBE_LLAMA_SERVER names llama-server (default ../shared/tools/llama.cpp/llama-server);
 * PROBE_LLAMA_SLOTS its parallel slots (default 16).
 * Usage: npx tsx bench/engine-agreement.ts [--workload probes|code|both] [-n N]
 *   [--items K] [--max-tokens T] (probes) [--code-items K] [--code-max-tokens T] (code)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readTokenizerDir } from '../src/backends/checkpoint-dir.ts';
import { CheckpointTokenizer } from '../src/backends/onnx/tokenizer.ts';
import { openBackend } from '../src/backends/open.ts';
import type { CompletionBackend, Sample, SampleRequest } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { type ActionFormat, sampledActionText, UnparsableAction } from '../src/formats/action-format.ts';
import { itemFormat } from '../src/formats/registry.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { SAMPLING } from '../src/protocol.ts';
import { percentileInterval } from '../src/stats/correlation.ts';
import { createRng, type Rng } from '../src/util/rng.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
function positive(name: string, fallback: number): number {
  const raw = arg(name, String(fallback));
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} takes a positive integer, not ${raw}`);
  return value;
}
const WORKLOADS = ['probes', 'code'] as const;
type WorkloadName = (typeof WORKLOADS)[number];
const workloadArg = arg('--workload', 'both');
const isWorkload = (name: string): name is WorkloadName => (WORKLOADS as readonly string[]).includes(name);
if (workloadArg !== 'both' && !isWorkload(workloadArg))
  throw new Error(`--workload takes ${WORKLOADS.join(', ')} or both, not ${workloadArg}`);
const selected: readonly WorkloadName[] = isWorkload(workloadArg) ? [workloadArg] : WORKLOADS;
const n = positive('-n', 64);
const SEED = 0;
const RESAMPLES = 2000;
const Z = 1.959964;
/** The code workload's stop strings: a blank line, or the next top-level definition. */
const CODE_STOPS = ['\n\n', '\ndef ', '\nclass '] as const;

const shared = join(REPO_ROOT, '..', 'shared');
const onnxDir = join(shared, 'models', 'llama-bpe8k-s1500');
const ggufFile = join(shared, 'models', 'gguf', 'llama-bpe8k-s1500-f32.gguf');
const referenceItemsFile = join(shared, 'models', 'reference-items.json');
if (!process.env.PROBE_LLAMA_SERVER) process.env.PROBE_LLAMA_SERVER = join(shared, 'tools', 'llama.cpp', 'llama-server');

type Finish = Sample['finishReason'];
const FINISHES: ReadonlyArray<{ reason: Finish; label: string }> = [
  { reason: 'stop', label: 'stop string' },
  { reason: 'eos', label: 'end of text' },
  { reason: 'length', label: 'length' },
  { reason: 'error', label: 'error (not returned)' },
];

/** One sample as measured. */
interface Observation {
  finish: Finish;
  /** The stop string that ended it, when `finish` is `stop`. */
  stop: string | undefined;
  /** UTF-8 bytes of the text (the stop string excluded). */
  bytes: number;
  tokens: number;
  /** It parses as the item's action; undefined where the workload has no action format. */
  parsed: boolean | undefined;
  /** Its bytes are not valid UTF-8 (llama.cpp: it could not return it). */
  notUtf8: boolean;
}

/** One engine's samples of one workload. */
interface EngineRun {
  name: string;
  observations: Observation[];
  /** Observations per item, for resampling within items. */
  byItem: Observation[][];
  /** The engine's start, shared by its workloads. */
  openSeconds: number;
  sampleSeconds: number;
  sampler: Record<string, unknown> | undefined;
  bos: string;
}

/** A metric: each sample's value, or undefined where the sample does not count towards it. */
interface Metric {
  label: string;
  kind: 'mean' | 'share';
  value: (o: Observation) => number | undefined;
}

/** What one workload samples and how its samples are measured and tabled. */
interface Workload {
  name: WorkloadName;
  /** A heading prefix. */
  title: string;
  /** One line: what its items are and how they are sampled. */
  describe: string;
  ids: string[];
  requests: SampleRequest[];
  /** Whether a sample parses as the item's action, where the workload has actions. */
  parses?: (item: number, sample: Sample) => boolean;
  metrics: Metric[];
  /** The per engine table's rows between "samples" and the speed rows. */
  engineRows: (runs: readonly EngineRun[], compared: readonly Compared[]) => string[][];
  /** The per item table: its columns after item and engine, and one engine's cells for one item. */
  itemColumns: string[];
  itemCells: (samples: readonly Observation[]) => string[];
  /** What its tables' numbers are, under the comparison table. */
  footnote: string;
}

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** The ONNX checkpoint's tokenizer, to read the exact bytes of in-process samples. */
const tokenizer = new CheckpointTokenizer(readTokenizerDir(onnxDir));

function parses(format: ActionFormat, sample: Sample): boolean {
  if (sample.finishReason === 'error') return false;
  try {
    format.parse(sampledActionText(format, sample));
    return true;
  } catch (error) {
    if (error instanceof UnparsableAction) return false;
    throw error;
  }
}

/** Whether the sampled tokens' bytes (EOS left out) are not valid UTF-8; text with U+FFFD where a token's bytes are unknown. */
function tokensNotUtf8(sample: Sample): boolean {
  const pieces = sample.tokens.filter((t) => !tokenizer.eosIds.has(t)).map((t) => tokenizer.bytesOf(t));
  if (pieces.some((p) => p === undefined)) return sample.text.includes('\uFFFD');
  const bytes = new Uint8Array(pieces.reduce((sum, p) => sum + p!.length, 0));
  let at = 0;
  for (const piece of pieces) {
    bytes.set(piece!, at);
    at += piece!.length;
  }
  try {
    strictUtf8.decode(bytes);
    return false;
  } catch {
    return true;
  }
}

async function bosOf(backend: CompletionBackend): Promise<string> {
  const use = await backend.bos?.();
  return use ? `${use.id === null ? 'no BOS' : `BOS ${use.id}`} (${use.source})` : 'unknown';
}

/** Opens the engine once and draws every workload's samples with it, one workload after the other; a run per workload. */
async function runEngine(
  name: string,
  spec: string,
  notUtf8: (sample: Sample) => boolean,
  workloads: readonly Workload[],
): Promise<EngineRun[]> {
  const opened = performance.now();
  const backend = await openBackend(spec);
  try {
    const openSeconds = (performance.now() - opened) / 1000;
    const sampler = await backend.samplerSettings?.(SAMPLING);
    const bos = await bosOf(backend);
    const runs: EngineRun[] = [];
    for (const workload of workloads) {
      const started = performance.now();
      const answers = await backend.sample(workload.requests);
      const sampleSeconds = (performance.now() - started) / 1000;
      const byItem = answers.map((samples, item) =>
        samples.map(
          (sample): Observation => ({
            finish: sample.finishReason,
            stop: sample.finishReason === 'stop' ? sample.stop : undefined,
            bytes: utf8.encode(sample.text).length,
            tokens: sample.tokens.length,
            parsed: workload.parses?.(item, sample),
            notUtf8: sample.finishReason === 'error' || notUtf8(sample),
          }),
        ),
      );
      if (byItem.length !== workload.requests.length || byItem.some((samples) => samples.length !== n))
        throw new Error(`${name} returned ${byItem.map((s) => s.length).join('/')} samples for the ${workload.name} workload`);
      runs.push({ name, observations: byItem.flat(), byItem, openSeconds, sampleSeconds, sampler, bos });
    }
    return runs;
  } finally {
    await backend.close();
  }
}

const returned = (o: Observation) => o.finish !== 'error';
const meanBytes: Metric = { label: 'mean bytes, returned samples', kind: 'mean', value: (o) => (returned(o) ? o.bytes : undefined) };
const meanTokens: Metric = { label: 'mean tokens, returned samples', kind: 'mean', value: (o) => (returned(o) ? o.tokens : undefined) };
const notUtf8Share: Metric = { label: 'not valid UTF-8 (llama.cpp: error)', kind: 'share', value: (o) => Number(o.notUtf8) };
const endsBy = (f: (typeof FINISHES)[number]): Metric => ({
  label: `ends by ${f.label}`,
  kind: 'share',
  value: (o) => Number(o.finish === f.reason),
});

/** The metric's mean over the samples that count towards it (NaN where none does), and how many do. */
function measure(metric: Metric, observations: readonly Observation[]): { value: number; count: number } {
  let sum = 0;
  let count = 0;
  for (const o of observations) {
    const v = metric.value(o);
    if (v === undefined) continue;
    sum += v;
    count++;
  }
  return { value: count ? sum / count : NaN, count };
}

/** One resample of a run: each item's samples drawn with replacement from its own. */
function resample(run: EngineRun, rng: Rng): Observation[] {
  return run.byItem.flatMap((samples) => Array.from({ length: samples.length }, () => samples[rng.int(samples.length)]!));
}

interface Interval {
  low: number;
  high: number;
}
function wilson(successes: number, total: number): Interval {
  if (total === 0) return { low: NaN, high: NaN };
  const p = successes / total;
  const denominator = 1 + (Z * Z) / total;
  const centre = (p + (Z * Z) / (2 * total)) / denominator;
  const half = (Z * Math.sqrt((p * (1 - p)) / total + (Z * Z) / (4 * total * total))) / denominator;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

interface Compared {
  metric: Metric;
  onnx: { value: number; count: number; interval: Interval };
  llama: { value: number; count: number; interval: Interval };
  difference: { value: number; interval: Interval };
}

/** Every metric on both runs, with per-engine intervals and the bootstrap interval of llama.cpp − in process. */
function compare(metrics: readonly Metric[], onnx: EngineRun, llama: EngineRun, rng: Rng): Compared[] {
  const draws = metrics.map(() => ({ onnx: [] as number[], llama: [] as number[], difference: [] as number[] }));
  for (let r = 0; r < RESAMPLES; r++) {
    const a = resample(onnx, rng);
    const b = resample(llama, rng);
    metrics.forEach((metric, m) => {
      const x = measure(metric, a).value;
      const y = measure(metric, b).value;
      draws[m]!.onnx.push(x);
      draws[m]!.llama.push(y);
      draws[m]!.difference.push(y - x);
    });
  }
  return metrics.map((metric, m) => {
    const engine = (run: EngineRun, resampled: number[]) => {
      const { value, count } = measure(metric, run.observations);
      const interval = metric.kind === 'share' ? wilson(Math.round(value * count), count) : percentileInterval(value, resampled);
      return { value, count, interval: { low: interval.low, high: interval.high } };
    };
    const a = engine(onnx, draws[m]!.onnx);
    const b = engine(llama, draws[m]!.llama);
    const difference = percentileInterval(b.value - a.value, draws[m]!.difference);
    return { metric, onnx: a, llama: b, difference: { value: difference.estimate, interval: difference } };
  });
}

// Formatting.
const percent = (v: number, digits = 1) => `${(100 * v).toFixed(digits)}%`;
const signed = (v: number, format: (x: number) => string) => `${v >= 0 ? '+' : '−'}${format(Math.abs(v))}`;
const fixed1 = (v: number) => v.toFixed(1);
/** A stop string as markdown shows it: escaped, quoted, in a code span. */
const quoted = (stop: string) => `\`${JSON.stringify(stop)}\``;
function valueWithInterval(metric: Metric, v: { value: number; interval: Interval }): string {
  if (!Number.isFinite(v.value)) return 'n/a';
  return metric.kind === 'share'
    ? `${percent(v.value)} [${percent(v.interval.low)}, ${percent(v.interval.high)}]`
    : `${fixed1(v.value)} [${fixed1(v.interval.low)}, ${fixed1(v.interval.high)}]`;
}
function differenceText(c: Compared): string {
  const format = c.metric.kind === 'share' ? (v: number) => (100 * v).toFixed(1) : fixed1;
  const { value, interval } = c.difference;
  if (!Number.isFinite(value)) return 'n/a';
  return `${signed(value, format)} [${signed(interval.low, format)}, ${signed(interval.high, format)}]${c.metric.kind === 'share' ? ' pts' : ''}`;
}
function verdict(c: Compared): string {
  const { low, high } = c.difference.interval;
  if (!Number.isFinite(low) || !Number.isFinite(high)) return 'no samples to compare';
  if (low <= 0 && high >= 0) return 'consistent';
  return `differs (llama.cpp ${high < 0 ? 'lower' : 'higher'})`;
}
function table(header: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
const countOf = (observations: readonly Observation[], test: (o: Observation) => boolean) => observations.filter(test).length;
const meanOf = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);
/** A run's side of a comparison: in process or llama.cpp. */
const sideOf = (c: Compared, run: EngineRun, runs: readonly EngineRun[]) => (run === runs[0] ? c.onnx : c.llama);
const byLabel = (compared: readonly Compared[], label: string) => compared.find((c) => c.metric.label === label)!;
/** A metric's row of the per engine table: each engine's value, interval and count. */
function metricRow(label: string, c: Compared, runs: readonly EngineRun[]): string[] {
  return [
    label,
    ...runs.map((run) => {
      const side = sideOf(c, run, runs);
      const count = c.metric.kind === 'share' ? String(Math.round(side.value * side.count)) : `${side.count} samples`;
      return `${valueWithInterval(c.metric, side)} (${count})`;
    }),
  ];
}
/** A share of all samples, per engine, as "x% (k)", with its Wilson interval where asked. */
function shareRow(label: string, runs: readonly EngineRun[], test: (o: Observation) => boolean, withInterval = false): string[] {
  return [
    label,
    ...runs.map((run) => {
      const k = countOf(run.observations, test);
      const total = run.observations.length;
      const interval = wilson(k, total);
      return `${percent(k / total)}${withInterval ? ` [${percent(interval.low)}, ${percent(interval.high)}]` : ''} (${k})`;
    }),
  ];
}
const tokensReturned = (run: EngineRun) => run.observations.reduce((sum, o) => sum + o.tokens, 0);
const meanCells = (samples: readonly Observation[]) => {
  const kept = samples.filter(returned);
  return [fixed1(meanOf(kept.map((o) => o.bytes))), fixed1(meanOf(kept.map((o) => o.tokens)))];
};

function probesWorkload(): Workload {
  const itemCount = positive('--items', 4);
  const maxTokens = positive('--max-tokens', 128);
  const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl')).slice(0, itemCount);
  const formats = items.map((item) => itemFormat(item));
  const metrics: Metric[] = [
    meanBytes,
    meanTokens,
    { label: 'parses as an action (error = failure)', kind: 'share', value: (o) => Number(o.parsed === true) },
    { label: 'mean bytes, valid UTF-8 on both', kind: 'mean', value: (o) => (o.notUtf8 ? undefined : o.bytes) },
    { label: 'parses, not UTF-8 a failure on both', kind: 'share', value: (o) => Number(o.parsed === true && !o.notUtf8) },
    notUtf8Share,
    ...FINISHES.filter((f) => f.reason !== 'error').map(endsBy),
  ];
  return {
    name: 'probes',
    title: 'Probes',
    describe: `${items.length} demo probe items, ≤ ${maxTokens} new tokens, each item's stops: ${items.map((item, i) => `${item.id} (${formats[i]!.name}, stops ${JSON.stringify(formats[i]!.stops)})`).join('; ')}`,
    ids: items.map((item) => item.id),
    requests: items.map((item, i) => ({
      prompt: item.context,
      n,
      ...SAMPLING,
      maxTokens,
      stop: [...formats[i]!.stops],
      seed: SEED,
    })),
    parses: (item, sample) => parses(formats[item]!, sample),
    metrics,
    engineRows: (runs, compared) => [
      metricRow('mean bytes [95%]', byLabel(compared, meanBytes.label), runs),
      metricRow('mean tokens [95%]', byLabel(compared, meanTokens.label), runs),
      shareRow('parses as an action [95% Wilson]', runs, (o) => o.parsed === true, true),
      ...FINISHES.map(({ reason, label }) => shareRow(`ends by ${label}`, runs, (o) => o.finish === reason)),
      shareRow('not valid UTF-8', runs, (o) => o.notUtf8),
    ],
    itemColumns: ['mean bytes', 'mean tokens', 'parses', 'stop / eos / length / error', 'not UTF-8'],
    itemCells: (samples) => [
      ...meanCells(samples),
      `${percent(countOf(samples, (o) => o.parsed === true) / samples.length, 0)} (${countOf(samples, (o) => o.parsed === true)}/${samples.length})`,
      FINISHES.map(({ reason }) => countOf(samples, (o) => o.finish === reason)).join(' / '),
      String(countOf(samples, (o) => o.notUtf8)),
    ],
    footnote: `${items.length} items × ${n} samples per engine, ${SAMPLING.temperature}/${SAMPLING.topP}, ≤ ${maxTokens} tokens. Mean intervals and every difference's: percentile bootstrap (samples resampled within each item and engine, items fixed, ${RESAMPLES.toLocaleString('en')} resamples); share intervals: Wilson. "Not valid UTF-8": llama.cpp's error samples; in process, samples whose token bytes do not decode as UTF-8. Bytes exclude the stop string.`,
  };
}

function codeWorkload(): Workload {
  const itemCount = positive('--code-items', 8);
  const maxTokens = positive('--code-max-tokens', 96);
  const all = JSON.parse(readFileSync(referenceItemsFile, 'utf8')) as Record<string, { context?: unknown }>;
  const items = Object.entries(all)
    .slice(0, itemCount)
    .map(([id, item]) => {
      if (typeof item.context !== 'string') throw new Error(`${referenceItemsFile}: ${id} has no context text`);
      return { id, context: item.context };
    });
  const stops: string[] = [...CODE_STOPS];
  const endedBy = (stop: string): Metric => ({
    label: `ends by stop ${quoted(stop)}`,
    kind: 'share',
    value: (o) => Number(o.stop === stop),
  });
  const metrics: Metric[] = [
    meanBytes,
    meanTokens,
    endsBy(FINISHES[0]!),
    ...stops.map(endedBy),
    ...FINISHES.slice(1).map(endsBy),
    notUtf8Share,
  ];
  const stopCounts = (samples: readonly Observation[]) => stops.map((stop) => countOf(samples, (o) => o.stop === stop));
  return {
    name: 'code',
    title: 'Code',
    describe: `${items.length} contexts of ${referenceItemsFile} (${items.map((item) => `${item.id}, ${utf8.encode(item.context).length} bytes`).join('; ')}), ≤ ${maxTokens} new tokens, stops ${JSON.stringify(stops)}`,
    ids: items.map((item) => item.id),
    requests: items.map((item) => ({ prompt: item.context, n, ...SAMPLING, maxTokens, stop: stops, seed: SEED })),
    metrics,
    engineRows: (runs, compared) => [
      metricRow('mean bytes [95%]', byLabel(compared, meanBytes.label), runs),
      metricRow('mean tokens [95%]', byLabel(compared, meanTokens.label), runs),
      ...compared.filter((c) => c.metric.kind === 'share').map((c) => metricRow(`${c.metric.label} [95% Wilson]`, c, runs)),
    ],
    itemColumns: ['mean bytes', 'mean tokens', `stop ${stops.map(quoted).join(' / ')} / eos / length / error`, 'not UTF-8'],
    itemCells: (samples) => [
      ...meanCells(samples),
      [...stopCounts(samples), ...FINISHES.slice(1).map(({ reason }) => countOf(samples, (o) => o.finish === reason))].join(' / '),
      String(countOf(samples, (o) => o.notUtf8)),
    ],
    footnote: `${items.length} contexts × ${n} samples per engine, ${SAMPLING.temperature}/${SAMPLING.topP}, ≤ ${maxTokens} tokens, stops ${stops.map(quoted).join(', ')} (the earliest match ends a sample). Mean intervals and every difference's: percentile bootstrap (samples resampled within each context and engine, contexts fixed, ${RESAMPLES.toLocaleString('en')} resamples); share intervals: Wilson. Bytes and tokens are the text up to the stop string, which they exclude (tokens: as sampled, so the token that completes the stop counts). An error sample is one llama.cpp could not return (not valid UTF-8); in process returns such a sample with U+FFFD and it ends as any other, so only llama.cpp has error samples (an error share above 0 differs by construction), its other endings lose those samples, and "not valid UTF-8" (llama.cpp: its error samples; in process: samples whose token bytes do not decode as UTF-8) is the share both engines can be compared on.`,
  };
}

// The run: in process first, then llama.cpp, one after the other so neither slows the other.
const workloads = selected.map((name) => (name === 'probes' ? probesWorkload() : codeWorkload()));
console.log(
  `Engine agreement on llama-bpe8k-s1500: workload${workloads.length > 1 ? 's' : ''} ${selected.join(', ')}; n = ${n} per item per engine; temperature ${SAMPLING.temperature}, top-p ${SAMPLING.topP}, seed ${SEED}`,
);
console.log(`  in process: ${onnxDir}`);
console.log(
  `  llama.cpp:  ${ggufFile} (${process.env.PROBE_LLAMA_SERVER}, ${process.env.PROBE_LLAMA_SLOTS || '16'} slots, ${process.env.PROBE_LLAMA_SERVER_ARGS ? `extra args ${process.env.PROBE_LLAMA_SERVER_ARGS}` : 'no extra args'})`,
);
for (const workload of workloads) console.log(`  ${workload.name}: ${workload.describe}`);
// Not valid UTF-8: the bytes sampled (in process) or U+FFFD in the text (either engine), besides llama.cpp's error samples.
const replaced = (sample: Sample) => sample.text.includes('\uFFFD');
const onnxRuns = await runEngine('in process', onnxDir, (sample) => replaced(sample) || tokensNotUtf8(sample), workloads);
const llamaRuns = await runEngine('llama.cpp', ggufFile, replaced, workloads);

console.log('\n## Samplers\n');
for (const run of [onnxRuns[0]!, llamaRuns[0]!]) console.log(`- ${run.name}: ${JSON.stringify(run.sampler)}; ${run.bos}`);

workloads.forEach((workload, w) => {
  const onnx = onnxRuns[w]!;
  const llama = llamaRuns[w]!;
  const runs = [onnx, llama];
  const compared = compare(workload.metrics, onnx, llama, createRng('engine-agreement', SEED));

  console.log(`\n## ${workload.title}: per engine, all samples\n`);
  console.log(
    table(
      ['', ...runs.map((run) => run.name)],
      [
        ['samples', ...runs.map((run) => String(run.observations.length))],
        ...workload.engineRows(runs, compared),
        ['start (load or launch + ready)', ...runs.map((run) => `${run.openSeconds.toFixed(1)} s`)],
        ['sampling wall time', ...runs.map((run) => `${run.sampleSeconds.toFixed(1)} s`)],
        ['tokens returned', ...runs.map((run) => String(tokensReturned(run)))],
        ['tokens/s', ...runs.map((run) => (tokensReturned(run) / run.sampleSeconds).toFixed(0))],
      ],
    ),
  );
  console.log(
    `\nMeans are over returned samples (an error sample has no text); intervals: percentile bootstrap, samples resampled within each item, ${RESAMPLES.toLocaleString('en')} resamples. Shares over all samples. Start: the engine's, once for all workloads.`,
  );

  console.log(`\n## ${workload.title}: per item\n`);
  console.log(
    table(
      ['item', 'engine', ...workload.itemColumns],
      workload.ids.flatMap((id, i) => runs.map((run) => [id, run.name, ...workload.itemCells(run.byItem[i]!)])),
    ),
  );

  console.log(`\n## ${workload.title}: llama.cpp − in process\n`);
  console.log(
    table(
      ['metric', 'in process [95%]', 'llama.cpp [95%]', 'llama.cpp − in process [95%]', 'verdict'],
      compared.map((c) => [
        c.metric.label,
        valueWithInterval(c.metric, c.onnx),
        valueWithInterval(c.metric, c.llama),
        differenceText(c),
        verdict(c),
      ]),
    ),
  );
  console.log(`\n${workload.footnote}`);

  console.log(`\n## ${workload.title}: verdicts\n`);
  for (const c of compared) console.log(`- ${c.metric.label}: ${verdict(c)} (difference ${differenceText(c)})`);
});
