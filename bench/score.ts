/**
 * Scoring benchmarks on real-layout graphs, measured side by side in one run (the
 * machine is shared and noisy, so only ratios are meaningful):
 *   (a) scored tokens/s of `score` vs a bare `session.run` over the same ~1.5K tokens
 *       (context + gold), at 8K (llama-bpe8k-s250 as shipped), 32K and 152K vocabularies
 *       (the same graph with its embedding/tied head resized, real-graph.ts); goal ≥ 0.9;
 *       and the same on the embedded n-gram graph, which has no KV cache (its forward
 *       pass takes ~1 ms, so that ratio measures splitting and tokenising the context in
 *       `score`, ~45 ms before and after the onnxruntime log-softmax, not the scoring);
 *   (b) 4 continuations on one ~3.5K-token context vs the gold alone (goal ≤ 1.3×), and
 *       vs re-running the context per option (≈ 4×);
 *   (c) peak RSS scoring a 1K- and a 4K-token context at each vocabulary, in a child
 *       process each (score-rss-child.ts): goal flat in context length × vocabulary.
 * Usage: npx tsx bench/score.ts [--reps N]
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { loadLadderTexts } from '../scripts/checkpoints/ladder.ts';
import { encodeModel, readModel, resizeVocab } from '../scripts/checkpoints/real-graph.ts';
import { splitPair } from '../src/backends/boundary.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { SESSION_OPTIONS } from '../src/backends/onnx/graph.ts';
import { EMBEDDED_CHECKPOINTS, EMBEDDED_PROBES, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';

const reps = Number(process.argv[process.argv.indexOf('--reps') + 1]) || 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

const REAL = join(REPO_ROOT, '..', 'shared', 'models', 'llama-bpe8k-s250');
const texts = loadLadderTexts(join(REPO_ROOT, 'ladder-text'));
const items = loadProbeItems(EMBEDDED_PROBES);
const longText = texts.code.join('\n');
const scratch = mkdtempSync(join(tmpdir(), 'probe-bench-score-'));

/**
 * The real checkpoint at `vocab` logits: the graph resized (real-graph.ts), config.json's
 * vocab_size set to match, the 8,192-token tokenizer copied as is. consistency.ts accepts
 * a graph wider than its tokenizer (padded embeddings); the extra logits still cost what
 * a real vocabulary of that width costs, in the head and in the log-softmax.
 */
function checkpointAt(vocab: number): string {
  if (vocab === 8192) return REAL;
  const dir = join(scratch, `vocab-${vocab}`);
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  writeFileSync(join(dir, 'onnx', 'model.onnx'), encodeModel(resizeVocab(readModel(join(REAL, 'onnx', 'model.onnx')), vocab)));
  const config = JSON.parse(readFileSync(join(REAL, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, vocab_size: vocab }));
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(REAL, file), join(dir, file));
  return dir;
}

/** A context of about `tokens` tokens: source code followed by a real probe context. */
function contextOf(backend: OnnxBackend, tokens: number): string {
  const tail = items[0]!.context;
  let chars = tokens;
  for (;;) {
    const text = `${longText.slice(0, chars)}\n${tail}`;
    const n = backend.encode(text.replace(/\s+$/u, '')).length;
    if (n >= tokens) return text;
    chars = Math.ceil(chars * (tokens / n) * 1.02);
  }
}

/** Feeds for one whole-sequence pass over `ids` from an empty cache, read off the graph's own inputs. */
function bareFeeds(session: ort.InferenceSession, ids: number[]): Record<string, ort.Tensor> {
  const n = ids.length;
  const feeds: Record<string, ort.Tensor> = { input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, n]) };
  for (const meta of session.inputMetadata) {
    if (meta.name === 'attention_mask') feeds[meta.name] = new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
    if (meta.name === 'position_ids') feeds[meta.name] = new ort.Tensor('int64', BigInt64Array.from(ids.map((_, i) => BigInt(i))), [1, n]);
    if (meta.name.startsWith('past_key_values') && meta.isTensor) {
      const [, heads, , dim] = meta.shape as number[];
      feeds[meta.name] = new ort.Tensor('float32', new Float32Array(0), [1, heads!, 0, dim!]);
    }
  }
  return feeds;
}

/** score vs bare session.run over the same tokens, interleaved, median of reps. */
async function throughput(label: string, dir: string, contextTokens: number, repsHere: number): Promise<string> {
  const backend = await OnnxBackend.open(dir);
  // The backend's own session options (threads that sleep between runs), so the ratio measures scoring, not thread settings.
  const session = await ort.InferenceSession.create(join(dir, 'onnx', 'model.onnx'), SESSION_OPTIONS);
  const ctx = contextOf(backend, contextTokens);
  const gold = items[0]!.gold;
  const pair = splitPair(ctx, gold, (t) => backend.encode(t));
  const ids = [...pair.contextTokens, ...pair.continuationTokens.slice(0, -1)];
  const raw = () => session.run(bareFeeds(session, ids));
  const scored = () => backend.score([{ context: ctx, continuations: [gold] }]);
  await raw();
  await scored();
  const rawMs: number[] = [];
  const scoreMs: number[] = [];
  for (let i = 0; i < repsHere; i++) {
    rawMs.push(await time(raw));
    scoreMs.push(await time(scored));
  }
  const tokens = ids.length + 1;
  const r = median(rawMs),
    s = median(scoreMs);
  await session.release();
  await backend.close();
  return `${label}, ${tokens} tokens (${pair.continuationTokens.length} scored): bare session.run ${((tokens / r) * 1000).toFixed(0)} tok/s, score ${((tokens / s) * 1000).toFixed(0)} tok/s → ratio ${(r / s).toFixed(3)}`;
}

async function benchSharedContext(dir: string): Promise<void> {
  const backend = await OnnxBackend.open(dir);
  const ctx = contextOf(backend, 3500);
  const options = [items[0]!.gold, items[1]!.gold, items[4]!.gold, items[7]!.gold];
  const gold = () => backend.score([{ context: ctx, continuations: [options[0]!] }]);
  const shared = () => backend.score([{ context: ctx, continuations: options }]);
  const separate = async () => {
    for (const o of options) await backend.score([{ context: ctx, continuations: [o] }]);
  };
  await gold();
  await shared();
  const g: number[] = [],
    sh: number[] = [],
    sep: number[] = [];
  for (let i = 0; i < reps; i++) {
    g.push(await time(gold));
    sh.push(await time(shared));
    sep.push(await time(separate));
  }
  const n = backend.encode(ctx.replace(/\s+$/u, '')).length;
  console.log(
    `(b) 8K vocabulary, ${n}-token context: gold alone ${median(g).toFixed(1)} ms, 4 options sharing the context ${median(sh).toFixed(1)} ms → ${(median(sh) / median(g)).toFixed(3)}× (goal ≤ 1.3×); context re-run per option ${(median(sep) / median(g)).toFixed(3)}×`,
  );
  await backend.close();
}

interface RssReport {
  tokens: number;
  peakRssMb: number;
  ms: number;
}

function peakRss(dir: string, mode: 'load-only' | 'score', tokens: number): RssReport {
  const child = join(dirname(fileURLToPath(import.meta.url)), 'score-rss-child.ts');
  const run = spawnSync(process.execPath, ['--import', 'tsx', child, dir, mode, String(tokens)], { encoding: 'utf8', cwd: REPO_ROOT });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as RssReport;
}

const vocabs = [8192, 32_000, 151_936];
const dirs = new Map(vocabs.map((v) => [v, checkpointAt(v)]));
try {
  for (const vocab of vocabs)
    console.log(await throughput(`(a) ${vocab}-logit vocabulary`, dirs.get(vocab)!, 1500, vocab > 100_000 ? Math.max(3, reps) : reps * 2));
  console.log(await throughput('(a) ngram-agent (no cache, 257 logits)', join(EMBEDDED_CHECKPOINTS, 'ngram-agent'), 1500, reps * 2));
  await benchSharedContext(REAL);
  for (const vocab of vocabs) {
    const dir = dirs.get(vocab)!;
    const loaded = peakRss(dir, 'load-only', 1024);
    const short = peakRss(dir, 'score', 1024);
    const long = peakRss(dir, 'score', 3968);
    const txv = (t: number) => (t * vocab * 4) / 2 ** 20;
    console.log(
      `(c) ${vocab}-logit vocabulary: peak RSS loaded ${loaded.peakRssMb.toFixed(0)} MiB; scoring ${short.tokens} tokens ${short.peakRssMb.toFixed(0)} MiB (T×V logits would be ${txv(short.tokens).toFixed(0)} MiB), ${long.tokens} tokens ${long.peakRssMb.toFixed(0)} MiB (T×V ${txv(long.tokens).toFixed(0)} MiB) → ${(long.peakRssMb - short.peakRssMb).toFixed(0)} MiB more for ${(long.tokens / short.tokens).toFixed(1)}× the context; scored in ${(short.ms / 1000).toFixed(1)} s / ${(long.ms / 1000).toFixed(1)} s`,
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
