/**
 * Batched sampling, measured side by side in one run: tokens/s of n samples of one prompt
 * sampled one at a time (`sampleRows: 1`, as before batching) and batched (default
 * policy, and a fixed batch of n), at a short prompt and at a pass@K-length one (the
 * longest demo probe context), plus n = 1 for reference. Every mode draws the same
 * samples (checked here: identical tokens), so tokens/s compare like with like.
 * The llama.cpp anchor: the same prompts, n and settings through the real llama-server on
 * the same weights as GGUF (`--gguf FILE`; default the s1500 conversion beside the default
 * checkpoint; started by probe, PROBE_LLAMA_SERVER names the binary), n = 1 and n, with the
 * ratios probe / llama.cpp and probe n / probe n = 1, all from this one run.
 * Then an ASAP-like episode of growing prompts sampled with and without prompt caches.
 * Usage: npx tsx bench/sampling.ts [--ckpt DIR] [--gguf FILE|none] [-n 16] [--max-tokens 256] [--reps 2]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OnnxBackend, type OnnxBackendOptions } from '../src/backends/onnx/backend.ts';
import { openBackend } from '../src/backends/open.ts';
import type { CompletionBackend, Sample, SampleRequest } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const ckpt = arg('--ckpt', join(REPO_ROOT, '..', 'shared', 'models', 'llama-bpe8k-s1500'));
const n = Number(arg('-n', '16'));
const maxTokens = Number(arg('--max-tokens', '256'));
const reps = Number(arg('--reps', '2'));
const gguf = arg('--gguf', join(REPO_ROOT, '..', 'shared', 'models', 'gguf', 'llama-bpe8k-s1500-f32.gguf'));
process.env.PROBE_LLAMA_SERVER ??= join(REPO_ROOT, '..', 'shared', 'tools', 'llama.cpp', 'llama-server');
const llama = gguf === 'none' ? undefined : await openBackend(gguf);

/** Tokens/s of n = 1 requests one after another (seeds seed … seed + 3: one sample alone can end at its first token). */
async function oneAtATimeRate(backend: CompletionBackend, request: SampleRequest): Promise<number> {
  const started = performance.now();
  let tokens = 0;
  for (let i = 0; i < 4; i++) {
    const [samples] = await backend.sample([{ ...request, n: 1, seed: request.seed + i }]);
    tokens += samples![0]!.tokens.length;
  }
  return tokens / ((performance.now() - started) / 1000);
}

const demo = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { context: string });
const prompts = {
  short: 'import os\nimport sys\n\n\nclass Config:\n    """Settings read from a file."""\n\n    def __init__(self, path):\n',
  long: demo.map((item) => item.context).sort((a, b) => b.length - a.length)[0]!,
};
// The decode graph's modes draw the same samples as each other; the checkpoint's own graph (the path before it) draws its own.
const modes = {
  'one at a time': { sampleRows: 1 },
  batched: {},
  [`fixed ${n}`]: { sampleRows: n },
  'export graph': { decode: 'graph' },
} as const satisfies Record<string, OnnxBackendOptions>;
const backends = new Map<string, OnnxBackend>();
for (const [name, options] of Object.entries(modes)) backends.set(name, await OnnxBackend.open(ckpt, options));
const first = backends.values().next().value!;
const decode = await first.decodeInfo();

console.log(`checkpoint ${ckpt}; n = ${n}; up to ${maxTokens} new tokens; temperature 1; best of ${reps}`);
console.log(
  decode.decoder
    ? `sampling steps: probe's shared-prefix decode graph (|Δ log-prob| vs the export's own graph ${decode.agreement.toExponential(1)}); "export graph" is the export's own graph, as before it`
    : `sampling steps: the export's own graph (${decode.reason})`,
);
for (const [label, prompt] of Object.entries(prompts)) {
  const request = { prompt, n, temperature: 1, topP: 1, maxTokens, stop: [], seed: 11 };
  const rate = new Map<string, number>();
  let reference: Sample[] | undefined;
  for (let rep = 0; rep < reps; rep++) {
    for (const [name, backend] of backends) {
      const started = performance.now();
      const [samples] = await backend.sample([request]);
      const seconds = (performance.now() - started) / 1000;
      const tokens = samples!.reduce((sum, s) => sum + s.tokens.length, 0);
      rate.set(name, Math.max(rate.get(name) ?? 0, tokens / seconds));
      if (name === 'export graph') continue;
      reference ??= samples;
      if (samples!.some((s, i) => s.tokens.join() !== reference![i]!.tokens.join())) throw new Error(`${name} drew different samples`);
    }
    rate.set('n = 1', Math.max(rate.get('n = 1') ?? 0, await oneAtATimeRate(first, request)));
  }
  const base = rate.get('one at a time')!;
  console.log(`\n${label} prompt (${first.encode(prompt).length} tokens):`);
  for (const [name, value] of rate)
    console.log(`  ${name.padEnd(14)} ${value.toFixed(0).padStart(6)} tokens/s  ${(value / base).toFixed(2)}× one at a time`);
  if (!llama) continue;
  // The anchor, measured between the same reps' in-process runs' rates: best of reps at n and at 1.
  const anchor = new Map<string, number>();
  for (let rep = 0; rep < reps; rep++) {
    const started = performance.now();
    const [samples] = await llama.sample([request]);
    const tokens = samples!.reduce((sum, s) => sum + s.tokens.length, 0);
    anchor.set(`llama.cpp n = ${n}`, Math.max(anchor.get(`llama.cpp n = ${n}`) ?? 0, tokens / ((performance.now() - started) / 1000)));
    anchor.set('llama.cpp n = 1', Math.max(anchor.get('llama.cpp n = 1') ?? 0, await oneAtATimeRate(llama, request)));
  }
  const ours = rate.get('batched')!;
  const theirs = anchor.get(`llama.cpp n = ${n}`)!;
  for (const [name, value] of anchor)
    console.log(`  ${name.padEnd(14)} ${value.toFixed(0).padStart(6)} tokens/s  (llama-server, same weights)`);
  console.log(
    `  probe batched / llama.cpp at n = ${n}: ${(ours / theirs).toFixed(2)}×; probe n = ${n} / probe n = 1: ${(ours / rate.get('n = 1')!).toFixed(2)}×; llama.cpp n = ${n} / its n = 1: ${(theirs / anchor.get('llama.cpp n = 1')!).toFixed(2)}×; probe batched / export graph batched: ${(ours / rate.get('export graph')!).toFixed(2)}×`,
  );
}
await llama?.close();

// Prompt caches: an ASAP-like episode (each prompt = the last one + the action + an observation), with and without reuse.
{
  const transcript = readFileSync(join(REPO_ROOT, '..', 'shared', 'synth', 'heldout-a', 'corpus.txt'), 'utf8').split('<|endoftext|>')[0]!;
  const steps = transcript.split('\n## Thinking\n');
  const timings = new Map<string, number>();
  for (const reusePrompts of [false, true, false, true]) {
    const backend = await OnnxBackend.open(ckpt, { reusePrompts });
    let prompt = '';
    const started = performance.now();
    for (const [i, step] of steps.entries()) {
      prompt += (i ? '\n## Thinking\n' : '') + step;
      await backend.sample([{ prompt, n: 1, temperature: 0.7, topP: 0.95, maxTokens: 48, stop: ['</bash>'], seed: i }]);
    }
    const name = reusePrompts ? 'reused' : 'fed whole';
    timings.set(name, Math.min(timings.get(name) ?? Infinity, performance.now() - started));
    await backend.close();
  }
  console.log(
    `\nASAP-like episode (${steps.length} steps, last prompt ${first.encode(transcript).length} tokens, ≤ 48 new tokens a step): prompts fed whole ${(timings.get('fed whole')! / 1000).toFixed(2)} s, continued from the last prompt's cache ${(timings.get('reused')! / 1000).toFixed(2)} s — ${(timings.get('fed whole')! / timings.get('reused')!).toFixed(2)}× faster`,
  );
}
await Promise.all([...backends.values()].map((b) => b.close()));
