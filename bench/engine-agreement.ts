/**
 * Engine agreement: whether llama.cpp's llama-server samples from the same distribution as
 * probe's in-process ONNX sampler on the same weights (the s1500 checkpoint as an ONNX
 * directory and as a float32 GGUF file, served by the llama-server probe starts). Both
 * engines draw n samples of each of the first K demo probe items, as pass@K asks for them
 * (the item's stops, temperature 0.7, top-p 0.95, seed 0); per engine and per item it
 * reports sample length (UTF-8 bytes, tokens), the share that parses as an action, how
 * samples end, and speed, then the difference llama.cpp − in process with a 95% interval
 * and a verdict per metric ("consistent": the interval contains 0).
 *
 * Intervals: a mean's is a percentile bootstrap that resamples each engine's samples within
 * each item (items fixed: both engines see the same prompts); a share's is Wilson's; a
 * difference's is that bootstrap's, the two engines resampled independently.
 *
 * llama.cpp cannot return a sample whose bytes are not valid UTF-8 (HTTP 500): such a
 * sample comes back as an `error` sample with no text. The in-process sampler returns the
 * same kind of sample with U+FFFD in its text, so "not valid UTF-8" is counted on both
 * (in process: the sampled tokens' bytes, EOS left out, do not decode as UTF-8), and the
 * length and parse rate are compared with and without those samples.
 *
 * PROBE_LLAMA_SERVER names llama-server (default ../shared/tools/llama.cpp/llama-server);
 * PROBE_LLAMA_SLOTS its parallel slots (default 16).
 * Usage: npx tsx bench/engine-agreement.ts [--items K] [-n N] [--max-tokens T]
 */
import { join } from 'node:path';
import { readTokenizerDir } from '../src/backends/onnx/checkpoint.ts';
import { CheckpointTokenizer } from '../src/backends/onnx/tokenizer.ts';
import { openBackend } from '../src/backends/open.ts';
import type { CompletionBackend, Sample, SampleRequest } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { type ActionFormat, sampledActionText, UnparsableAction } from '../src/formats/action-format.ts';
import { itemFormat } from '../src/formats/registry.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { SAMPLING } from '../src/protocol.ts';
import type { ProbeItem } from '../src/schema/probe-item.ts';
import { percentileInterval } from '../src/stats/correlation.ts';
import { createRng, type Rng } from '../src/util/rng.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
function positive(name: string, fallback: number): number {
  const raw = arg(name, String(fallback));
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} takes a positive integer, not ${raw}`);
  return value;
}
const itemCount = positive('--items', 4);
const n = positive('-n', 64);
const maxTokens = positive('--max-tokens', 128);
const SEED = 0;
const RESAMPLES = 2000;
const Z = 1.959964;

const shared = join(REPO_ROOT, '..', 'shared');
const onnxDir = join(shared, 'models', 'llama-bpe8k-s1500');
const ggufFile = join(shared, 'models', 'gguf', 'llama-bpe8k-s1500-f32.gguf');
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
  /** UTF-8 bytes of the text (the stop string excluded). */
  bytes: number;
  tokens: number;
  parsed: boolean;
  /** Its bytes are not valid UTF-8 (llama.cpp: it could not return it). */
  notUtf8: boolean;
}

interface EngineRun {
  name: string;
  observations: Observation[];
  /** Observations per item, for resampling within items. */
  byItem: Observation[][];
  openSeconds: number;
  sampleSeconds: number;
  sampler: Record<string, unknown> | undefined;
  bos: string;
}

const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl')).slice(0, itemCount);
const formats = items.map((item) => itemFormat(item));
const requests: SampleRequest[] = items.map((item, i) => ({
  prompt: item.context,
  n,
  ...SAMPLING,
  maxTokens,
  stop: [...formats[i]!.stops],
  seed: SEED,
}));
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

async function runEngine(name: string, spec: string, notUtf8: (sample: Sample) => boolean): Promise<EngineRun> {
  const opened = performance.now();
  const backend = await openBackend(spec);
  try {
    const openSeconds = (performance.now() - opened) / 1000;
    const sampler = backend.samplerSettings?.(SAMPLING);
    const bos = await bosOf(backend);
    const started = performance.now();
    const answers = await backend.sample(requests);
    const sampleSeconds = (performance.now() - started) / 1000;
    const byItem = answers.map((samples, item) =>
      samples.map(
        (sample): Observation => ({
          finish: sample.finishReason,
          bytes: utf8.encode(sample.text).length,
          tokens: sample.tokens.length,
          parsed: parses(formats[item]!, sample),
          notUtf8: sample.finishReason === 'error' || notUtf8(sample),
        }),
      ),
    );
    if (byItem.some((samples) => samples.length !== n))
      throw new Error(`${name} returned ${byItem.map((s) => s.length).join('/')} samples`);
    return { name, observations: byItem.flat(), byItem, openSeconds, sampleSeconds, sampler, bos };
  } finally {
    await backend.close();
  }
}

/** A metric: each sample's value, or undefined where the sample does not count towards it. */
interface Metric {
  label: string;
  kind: 'mean' | 'share';
  value: (o: Observation) => number | undefined;
}
const returned = (o: Observation) => o.finish !== 'error';
const METRICS: Metric[] = [
  { label: 'mean bytes, returned samples', kind: 'mean', value: (o) => (returned(o) ? o.bytes : undefined) },
  { label: 'mean tokens, returned samples', kind: 'mean', value: (o) => (returned(o) ? o.tokens : undefined) },
  { label: 'parses as an action (error = failure)', kind: 'share', value: (o) => Number(o.parsed) },
  { label: 'mean bytes, valid UTF-8 on both', kind: 'mean', value: (o) => (o.notUtf8 ? undefined : o.bytes) },
  { label: 'parses, not UTF-8 a failure on both', kind: 'share', value: (o) => Number(o.parsed && !o.notUtf8) },
  { label: 'not valid UTF-8 (llama.cpp: error)', kind: 'share', value: (o) => Number(o.notUtf8) },
  ...FINISHES.filter((f) => f.reason !== 'error').map(
    (f): Metric => ({ label: `ends by ${f.label}`, kind: 'share', value: (o) => Number(o.finish === f.reason) }),
  ),
];

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
function compare(onnx: EngineRun, llama: EngineRun): Compared[] {
  const rng = createRng('engine-agreement', SEED);
  const draws = METRICS.map(() => ({ onnx: [] as number[], llama: [] as number[], difference: [] as number[] }));
  for (let r = 0; r < RESAMPLES; r++) {
    const a = resample(onnx, rng);
    const b = resample(llama, rng);
    METRICS.forEach((metric, m) => {
      const x = measure(metric, a).value;
      const y = measure(metric, b).value;
      draws[m]!.onnx.push(x);
      draws[m]!.llama.push(y);
      draws[m]!.difference.push(y - x);
    });
  }
  return METRICS.map((metric, m) => {
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

// The run: in process first, then llama.cpp, one after the other so neither slows the other.
console.log(
  `Engine agreement on llama-bpe8k-s1500: ${items.length} demo probe items × n = ${n} per engine; temperature ${SAMPLING.temperature}, top-p ${SAMPLING.topP}, ≤ ${maxTokens} new tokens, seed ${SEED}`,
);
console.log(`  in process: ${onnxDir}`);
console.log(
  `  llama.cpp:  ${ggufFile} (${process.env.PROBE_LLAMA_SERVER}, ${process.env.PROBE_LLAMA_SLOTS || '16'} slots, ${process.env.PROBE_LLAMA_SERVER_ARGS ? `extra args ${process.env.PROBE_LLAMA_SERVER_ARGS}` : 'no extra args'})`,
);
console.log(
  `  items: ${items.map((item: ProbeItem, i) => `${item.id} (${formats[i]!.name}, stops ${JSON.stringify(formats[i]!.stops)})`).join('; ')}`,
);
// Not valid UTF-8: the bytes sampled (in process) or U+FFFD in the text (either engine), besides llama.cpp's error samples.
const replaced = (sample: Sample) => sample.text.includes('\uFFFD');
const onnx = await runEngine('in process', onnxDir, (sample) => replaced(sample) || tokensNotUtf8(sample));
const llama = await runEngine('llama.cpp', ggufFile, replaced);
const runs = [onnx, llama];

console.log('\n## Samplers\n');
for (const run of runs) console.log(`- ${run.name}: ${JSON.stringify(run.sampler)}; ${run.bos}`);

console.log('\n## Per engine, all samples\n');
const compared = compare(onnx, llama);
const find = (label: string) => compared.find((c) => c.metric.label === label)!;
const meanRow = (label: string, metric: string) => [
  label,
  ...runs.map((run) => {
    const c = find(metric);
    const side = run === onnx ? c.onnx : c.llama;
    return `${valueWithInterval(c.metric, side)} (${side.count} samples)`;
  }),
];
const shareRow = (label: string, test: (o: Observation) => boolean, withInterval = false) => [
  label,
  ...runs.map((run) => {
    const k = countOf(run.observations, test);
    const total = run.observations.length;
    const interval = wilson(k, total);
    return `${percent(k / total)}${withInterval ? ` [${percent(interval.low)}, ${percent(interval.high)}]` : ''} (${k})`;
  }),
];
const tokensReturned = (run: EngineRun) => run.observations.reduce((sum, o) => sum + o.tokens, 0);
console.log(
  table(
    ['', ...runs.map((run) => run.name)],
    [
      ['samples', ...runs.map((run) => String(run.observations.length))],
      meanRow('mean bytes [95%]', 'mean bytes, returned samples'),
      meanRow('mean tokens [95%]', 'mean tokens, returned samples'),
      shareRow('parses as an action [95% Wilson]', (o) => o.parsed, true),
      ...FINISHES.map(({ reason, label }) => shareRow(`ends by ${label}`, (o) => o.finish === reason)),
      shareRow('not valid UTF-8', (o) => o.notUtf8),
      ['start (load or launch + ready)', ...runs.map((run) => `${run.openSeconds.toFixed(1)} s`)],
      ['sampling wall time', ...runs.map((run) => `${run.sampleSeconds.toFixed(1)} s`)],
      ['tokens returned', ...runs.map((run) => String(tokensReturned(run)))],
      ['tokens/s', ...runs.map((run) => (tokensReturned(run) / run.sampleSeconds).toFixed(0))],
    ],
  ),
);
console.log(
  '\nMeans are over returned samples (an error sample has no text); intervals: percentile bootstrap, samples resampled within each item, 2,000 resamples. Shares over all samples.',
);

console.log('\n## Per item\n');
console.log(
  table(
    ['item', 'engine', 'mean bytes', 'mean tokens', 'parses', 'stop / eos / length / error', 'not UTF-8'],
    items.flatMap((item, i) =>
      runs.map((run) => {
        const samples = run.byItem[i]!;
        const kept = samples.filter(returned);
        return [
          item.id,
          run.name,
          fixed1(meanOf(kept.map((o) => o.bytes))),
          fixed1(meanOf(kept.map((o) => o.tokens))),
          `${percent(countOf(samples, (o) => o.parsed) / samples.length, 0)} (${countOf(samples, (o) => o.parsed)}/${samples.length})`,
          FINISHES.map(({ reason }) => countOf(samples, (o) => o.finish === reason)).join(' / '),
          String(countOf(samples, (o) => o.notUtf8)),
        ];
      }),
    ),
  ),
);

console.log('\n## llama.cpp − in process\n');
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
console.log(
  `\n${items.length} items × ${n} samples per engine, ${SAMPLING.temperature}/${SAMPLING.topP}, ≤ ${maxTokens} tokens. Mean intervals and every difference's: percentile bootstrap (samples resampled within each item and engine, items fixed, ${RESAMPLES.toLocaleString('en')} resamples); share intervals: Wilson. "Not valid UTF-8": llama.cpp's error samples; in process, samples whose token bytes do not decode as UTF-8. Bytes exclude the stop string.`,
);

console.log('\n## Verdicts\n');
for (const c of compared) console.log(`- ${c.metric.label}: ${verdict(c)} (difference ${differenceText(c)})`);
