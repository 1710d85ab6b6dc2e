/**
 * Scoring benchmarks, measured side by side in one run (the machine is shared and noisy,
 * so only ratios are meaningful):
 *   (a) scored tokens/s of `score` vs raw `session.run` over the same tokens (goal ≥ 0.9);
 *   (b) 4 continuations on one 4K-token context vs the gold alone (goal ≤ 1.3×),
 *       and vs re-running the context per option (≈ 4×);
 *   (c) peak RSS scoring a 16K-token context with a 32K-vocabulary checkpoint
 *       (goal: far below the T×V logits a whole-sequence pass would materialise).
 * Usage: npx tsx bench/score.ts [--reps N]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { buildWideAttention, loadCorpora } from '../scripts/checkpoints/ladder.ts';
import { splitPair } from '../src/backends/boundary.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { EMBEDDED_CHECKPOINTS, EMBEDDED_PROBES, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';

const reps = Number(process.argv[process.argv.indexOf('--reps') + 1]) || 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
async function time(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

const corpora = loadCorpora(join(REPO_ROOT, 'corpora'));
const items = loadProbeItems(EMBEDDED_PROBES);
const longText = corpora.agent.join('\n');

/** A context of about `tokens` tokens: agent-log text followed by a real probe context. */
function contextOf(backend: OnnxBackend, tokens: number): string {
  const tail = items[0]!.context;
  let text = tail;
  let chars = tokens * 2;
  for (;;) {
    text = longText.slice(0, chars) + '\n' + tail;
    const n = backend.encode(text.replace(/\s+$/u, '')).length;
    if (n >= tokens) return text;
    chars = Math.ceil(chars * (tokens / n) * 1.02);
  }
}

async function benchThroughput(): Promise<void> {
  const dir = join(EMBEDDED_CHECKPOINTS, 'attn-agent');
  const backend = await OnnxBackend.open(dir);
  const session = await ort.InferenceSession.create(join(dir, 'onnx', 'model.onnx'), { logSeverityLevel: 3, graphOptimizationLevel: 'all' });
  const ctx = contextOf(backend, 1500);
  const gold = items[0]!.gold;
  const pair = splitPair(ctx, gold, (t) => backend.encode(t));
  const ids = [...pair.contextTokens, ...pair.continuationTokens.slice(0, -1)];
  const empty = (shape: number[]) => new ort.Tensor('float32', new Float32Array(0), shape);
  const raw = () => session.run({
    input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map((_, i) => BigInt(i))), [1, ids.length]),
    'past_key_values.0.key': empty([1, 2, 0, 8]), 'past_key_values.0.value': empty([1, 2, 0, 8]),
    'past_key_values.1.key': empty([1, 2, 0, 8]), 'past_key_values.1.value': empty([1, 2, 0, 8]),
  });
  const scored = () => backend.score([{ context: ctx, continuations: [gold] }]);
  await raw(); await scored();
  const rawMs: number[] = [];
  const scoreMs: number[] = [];
  for (let i = 0; i < reps * 4; i++) { rawMs.push(await time(raw)); scoreMs.push(await time(scored)); }
  const tokens = ids.length + 1;
  const r = median(rawMs), s = median(scoreMs);
  console.log(`(a) attn-agent, ${tokens} tokens (context + gold): raw session.run ${(tokens / r * 1000).toFixed(0)} tok/s, score ${(tokens / s * 1000).toFixed(0)} tok/s → ratio ${(r / s).toFixed(3)} (goal ≥ 0.9)`);
  await session.release();
  await backend.close();

  // The same on a graph without a KV cache (one pass either way): what `score` adds on top.
  const ngramDir = join(EMBEDDED_CHECKPOINTS, 'ngram-agent');
  const ngram = await OnnxBackend.open(ngramDir);
  const ngramSession = await ort.InferenceSession.create(join(ngramDir, 'onnx', 'model.onnx'), { logSeverityLevel: 3, graphOptimizationLevel: 'all' });
  const byteIds = [...ngram.encode(ctx.replace(/\s+$/u, '')), ...splitPair(ctx, gold, (t) => ngram.encode(t)).continuationTokens.slice(0, -1)];
  const rawNgram = () => ngramSession.run({
    input_ids: new ort.Tensor('int64', BigInt64Array.from(byteIds.map(BigInt)), [1, byteIds.length]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(byteIds.length).fill(1n), [1, byteIds.length]),
  });
  const scoredNgram = () => ngram.score([{ context: ctx, continuations: [gold] }]);
  await rawNgram(); await scoredNgram();
  const rn: number[] = [], sn: number[] = [];
  for (let i = 0; i < reps * 4; i++) { rn.push(await time(rawNgram)); sn.push(await time(scoredNgram)); }
  const nTokens = byteIds.length + 1;
  console.log(`(a) ngram-agent (no cache), ${nTokens} tokens: raw session.run ${(nTokens / median(rn) * 1000).toFixed(0)} tok/s, score ${(nTokens / median(sn) * 1000).toFixed(0)} tok/s → ratio ${(median(rn) / median(sn)).toFixed(3)} (goal ≥ 0.9)`);
  await ngramSession.release();
  await ngram.close();
}

async function benchSharedContext(): Promise<void> {
  const backend = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, 'attn-agent'));
  const ctx = contextOf(backend, 4096);
  const options = [items[0]!.gold, items[1]!.gold, items[4]!.gold, items[7]!.gold];
  const gold = () => backend.score([{ context: ctx, continuations: [options[0]!] }]);
  const shared = () => backend.score([{ context: ctx, continuations: options }]);
  const separate = async () => { for (const o of options) await backend.score([{ context: ctx, continuations: [o] }]); };
  await gold(); await shared();
  const g: number[] = [], sh: number[] = [], sep: number[] = [];
  for (let i = 0; i < reps; i++) { g.push(await time(gold)); sh.push(await time(shared)); sep.push(await time(separate)); }
  const n = backend.encode(ctx.replace(/\s+$/u, '')).length;
  console.log(`(b) attn-agent, ${n}-token context: gold alone ${median(g).toFixed(1)} ms, 4 options sharing the context ${median(sh).toFixed(1)} ms → ${(median(sh) / median(g)).toFixed(3)}× (goal ≤ 1.3×); context re-run per option ${(median(sep) / median(g)).toFixed(3)}×`);
  await backend.close();
}

function benchPeakRss(): void {
  const dir = mkdtempSync(join(tmpdir(), 'probe-bench-wide-'));
  const files = buildWideAttention(32_000, 32_768, [...corpora.prose, ...corpora.code, ...corpora.agent]);
  for (const [rel, data] of files) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), data);
  }
  const child = join(dirname(fileURLToPath(import.meta.url)), 'score-rss-child.ts');
  const measure = (mode: string) => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', child, dir, mode], { encoding: 'utf8', cwd: REPO_ROOT });
    if (run.status !== 0) throw new Error(run.stderr);
    return JSON.parse(run.stdout.trim().split('\n').pop()!) as { tokens: number; vocab: number; loadedRssMb: number; peakRssMb: number; ms: number };
  };
  const loaded = measure('load-only');
  const scored = measure('score');
  const txv = (scored.tokens * scored.vocab * 4) / 2 ** 20;
  console.log(`(c) 32K-vocabulary checkpoint, ${scored.tokens}-token context: peak RSS ${scored.peakRssMb.toFixed(0)} MiB (model loaded, nothing scored: ${loaded.peakRssMb.toFixed(0)} MiB) vs ${txv.toFixed(0)} MiB for T×V float32 logits → ${(scored.peakRssMb / txv).toFixed(3)} of T×V; scored in ${(scored.ms / 1000).toFixed(1)} s`);
}

await benchThroughput();
await benchSharedContext();
benchPeakRss();
