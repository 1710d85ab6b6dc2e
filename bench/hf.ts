/**
 * Hugging Face directories in process, against HF transformers and llama.cpp, measured side
 * by side in one run (the machine is shared and noisy, so only ratios are meaningful; each
 * pair of figures is A then B in one rep, A B A B …, and the ratio is the median of the
 * pairs' ratios):
 *   (1) scoring: `OnnxBackend.score` vs transformers (PyTorch CPU, fp32, SDPA attention,
 *       torch.set_num_threads = onnxruntime's intra-op threads; bench/hf_transformers.py, one
 *       worker process holding the model) on the contexts and golds of
 *       ../shared/models/reference-items.json, split as lm-evaluation-harness does (no BOS),
 *       transformers running one forward pass per item, logits kept for the continuation's
 *       positions only (logits_to_keep: its fastest path). Tokens/s counts the tokens fed
 *       (context + continuation), tokenising included in both; loads are timed apart. On
 *       llama-bpe8k-s1500 (1.8 M parameters, all 30 items) and on an 88 M-parameter
 *       randomly initialised Llama (hidden 768, 12 layers, 12 heads, 4 KV heads, MLP 2048,
 *       vocabulary 8192, untied; made once by the helper under $TMPDIR/probe-bench-hf/, fp32
 *       and bf16), on the 8 demo items there (--big-items K: the first K items) to keep the run
 *       short. Agreement: max |Δ nats| per item between the two (goal ~1e-4 or less), and on
 *       llama-bpe8k-s1500 each one's against ../shared/models/reference-logprobs.json. Goal:
 *       probe / transformers ≥ 1.5×.
 *   (1b) Patch MCQ: every option of the shipped probe set's items (probes/demo.jsonl; 6 of them
 *       on the 88 M model), probe scoring each item's options after one pass over its context,
 *       transformers one pass per (context, option), as lm-evaluation-harness's hf model
 *       scores continuations longer than one token. Options/s and their ratio.
 *   (2) sampling: n = 8 samples per prompt, temperature 1, top-p 1, 64 new tokens, one demo
 *       context a rep (a different one each rep up to 8 reps, so no engine continues a cached
 *       prompt; probe opened with reusePrompts: false): `OnnxBackend.sample` vs
 *       transformers' `generate` (do_sample, num_return_sequences 8, top-k 0, KV cache) on both
 *       checkpoints. Tokens/s counts sampled tokens up to and including EOS. generate expands
 *       the prompt to 8 rows before its prefill; probe feeds it once and shares it. Both
 *       engines sample once before the reps (transformers' first generate is far slower).
 *   (3) peak RSS, one child process each (hf-rss-child.ts; the helper's `rss` for
 *       transformers): open a directory and score one ~1K-token context. The 88 M model in
 *       fp32 and bf16 (both run in fp32) against the tiny checkpoint in the same kind of process
 *       (the baseline: node + onnxruntime + tokenizer; python + torch + transformers). Goal:
 *       (peak − baseline) / (fp32 weights + KV cache of that context) ≤ 1.5. Peak RSS is the
 *       child's VmHWM (/proc/self/status): getrusage's maxrss in a child also holds the RSS
 *       of this process at the fork (Linux keeps the forked copy's peak across exec), so
 *       that figure is printed only for the baseline, as a reminder.
 *   (4) llama.cpp: the sampling workload of (2) on llama-bpe8k-s1500 in process vs
 *       llama-server on its GGUF twin (started through probe's openBackend, as a run starts
 *       it: -no-kvu, f32 KV, flash attention off, -t = available cores; PROBE_LLAMA_SERVER
 *       names the binary, default ../shared/tools/llama.cpp/llama-server). Goal ≥ 1.0×.
 * PYTHON names the interpreter (default python3).
 * Usage: npx tsx bench/hf.ts [--reps N] [--big-items K]
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { splitPair } from '../src/backends/boundary.ts';
import { readSafetensors } from '../src/backends/hf/safetensors.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { readTokenizerDir } from '../src/backends/checkpoint-dir.ts';
import { CheckpointTokenizer } from '../src/backends/onnx/tokenizer.ts';
import { openBackend } from '../src/backends/open.ts';
import type { CompletionBackend, SampleRequest } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const reps = Number(arg('--reps', '5'));
const bigItems = Number(arg('--big-items', '0'));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const here = dirname(fileURLToPath(import.meta.url));
const shared = join(REPO_ROOT, '..', 'shared');
const TINY = join(shared, 'models', 'hf', 'llama-bpe8k-s1500');
const GGUF = join(shared, 'models', 'gguf', 'llama-bpe8k-s1500-f32.gguf');
const HELPER = join(here, 'hf_transformers.py');
const PYTHON = process.env.PYTHON ?? 'python3';
process.env.PROBE_LLAMA_SERVER ??= join(shared, 'tools', 'llama.cpp', 'llama-server');

/**
 * onnxruntime's intra-op pool when the session options name no count (graph.ts names none):
 * one thread per physical core, read here from /proc/cpuinfo (physical id, core id).
 */
function physicalCores(): number {
  try {
    const cores = new Set<string>();
    for (const block of readFileSync('/proc/cpuinfo', 'utf8').split('\n\n')) {
      const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(\\d+)`, 'm').exec(block)?.[1];
      if (field('processor') !== undefined) cores.add(`${field('physical id')}:${field('core id')}`);
    }
    return Math.min(cores.size || availableParallelism(), availableParallelism());
  } catch {
    return availableParallelism();
  }
}
const threads = physicalCores();

function helper(args: string[]): Record<string, unknown> {
  const run = spawnSync(PYTHON, [HELPER, ...args], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (run.status !== 0) throw new Error(`${PYTHON} ${HELPER} ${args.join(' ')} failed:\n${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

interface Item {
  id: string;
  context: string;
  gold: string;
}
const items: Item[] = Object.entries(
  JSON.parse(readFileSync(join(shared, 'models', 'reference-items.json'), 'utf8')) as Record<string, { context: string; gold: string }>,
).map(([id, item]) => ({ id, context: item.context, gold: item.gold }));
const demo = items.filter((item) => item.id.startsWith('demo-'));

/** The shipped probe set's Patch MCQ items: a context and its options, the gold first. */
interface McqItem {
  id: string;
  context: string;
  options: string[];
}
const mcqItems: McqItem[] = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { id: string; context: string; gold: string; distractors: string[] })
  .map((item) => ({ id: item.id, context: item.context, options: [item.gold, ...item.distractors] }));

/** The transformers worker (bench/hf_transformers.py worker): one JSON request per line, one JSON answer per line. */
class TransformersWorker {
  private stderr = '';
  private readonly lines: AsyncIterator<string>;

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    this.lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  /** Starts a worker on `dir` and waits for its model: from_pretrained's seconds and the imports' before it. */
  static async start(dir: string): Promise<{ worker: TransformersWorker; loadSeconds: number; importSeconds: number }> {
    const worker = new TransformersWorker(spawn(PYTHON, [HELPER, 'worker', dir, String(threads)], { stdio: ['pipe', 'pipe', 'pipe'] }));
    const ready = (await worker.next()) as { loadSeconds: number; importSeconds: number };
    return { worker, ...ready };
  }

  private async next(): Promise<unknown> {
    const line = await this.lines.next();
    if (line.done) throw new Error(`the transformers worker ended:\n${this.stderr}`);
    return JSON.parse(line.value);
  }

  async request<T>(body: Record<string, unknown>): Promise<T> {
    this.child.stdin.write(`${JSON.stringify(body)}\n`);
    return (await this.next()) as T;
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    await new Promise((resolve) => this.child.once('exit', resolve));
  }
}

/** Rates of A and B, A then B in each rep: medians and the median of the pairs' ratios A / B. */
function ratioLine(a: number[], b: number[]): string {
  const ratios = a.map((x, i) => x / b[i]!);
  return `${median(ratios).toFixed(2)}× (pairs ${ratios.map((r) => r.toFixed(2)).join(', ')})`;
}

const sampleRequest = (prompt: string, seed: number, maxTokens = 64): SampleRequest => ({
  prompt,
  n: 8,
  temperature: 1,
  topP: 1,
  maxTokens,
  stop: [],
  seed,
});
/** Rep r's prompts: one demo context, a different one in each rep (for up to eight reps). */
const promptsOf = (rep: number) => [demo[rep % demo.length]!.context];
const WARM_PROMPT = 'import os\nimport sys\n\n\ndef main():\n';

/** Tokens/s of one rep's prompts sampled one after another; samples that came back as errors counted apart. */
async function sampleRate(backend: CompletionBackend, rep: number): Promise<{ rate: number; errors: number }> {
  const started = performance.now();
  let tokens = 0;
  let errors = 0;
  for (const [i, prompt] of promptsOf(rep).entries()) {
    const [samples] = await backend.sample([sampleRequest(prompt, 100 * rep + i)]);
    tokens += sum(samples!.map((s) => s.tokens.length));
    errors += samples!.filter((s) => s.finishReason === 'error').length;
  }
  return { rate: tokens / ((performance.now() - started) / 1000), errors };
}

/** The reference nats (no BOS) of one checkpoint in ../shared/models/reference-logprobs.json, by item. */
function referenceNats(checkpoint: string): Map<string, number> {
  const file = JSON.parse(readFileSync(join(shared, 'models', 'reference-logprobs.json'), 'utf8')) as {
    models: Record<string, { items: Record<string, { nats_nobos: number }> }>;
  };
  return new Map(Object.entries(file.models[checkpoint]!.items).map(([id, item]) => [id, item.nats_nobos]));
}

/** The largest |nats − reference| over the items the reference has. */
const maxOff = (nats: number[], scored: Item[], reference: Map<string, number>) =>
  Math.max(...nats.flatMap((n, i) => (reference.has(scored[i]!.id) ? [Math.abs(n - reference.get(scored[i]!.id)!)] : [])));

/** Sections (1) and (2) on one checkpoint directory; `reference`: the checkpoint's reference nats, where it has them. */
async function versusTransformers(
  label: string,
  dir: string,
  scored: Item[],
  mcq: McqItem[],
  reference?: Map<string, number>,
): Promise<void> {
  let started = performance.now();
  const probe = await OnnxBackend.open(dir, { reusePrompts: false });
  const probeLoad = (performance.now() - started) / 1000;
  started = performance.now();
  const { worker: tf, loadSeconds, importSeconds } = await TransformersWorker.start(dir);
  const tfStart = (performance.now() - started) / 1000;
  try {
    const encode = (text: string) => probe.encode(text);
    const pairs = scored.map((item) => splitPair(item.context, item.gold, encode));
    const fed = sum(pairs.map((p) => p.contextTokens.length + p.continuationTokens.length));
    const continuation = sum(pairs.map((p) => p.continuationTokens.length));
    const requests = scored.map((item) => ({ context: item.context, continuations: [item.gold] }));
    const tfItems = scored.map((item) => ({ context: item.context, continuation: item.gold }));
    console.log(
      `\n${label}: load probe ${probeLoad.toFixed(2)} s (graph built from the safetensors), transformers from_pretrained ${loadSeconds.toFixed(2)} s (+ ${importSeconds.toFixed(1)} s importing torch/transformers; ${tfStart.toFixed(1)} s to a ready worker)`,
    );
    // Warm-up: one item, one short sample each (transformers' first generate is far slower than the rest).
    await probe.score(requests.slice(0, 1));
    await tf.request({ op: 'score', items: tfItems.slice(0, 1) });
    await probe.sample([sampleRequest(WARM_PROMPT, 7, 8)]);
    await tf.request({ op: 'sample', prompts: [WARM_PROMPT], n: 8, maxTokens: 8, seed: 7 });

    type Scored = { seconds: number; fed: number; nats: number[]; tokens: number[] };
    const probeRates: number[] = [];
    const tfRates: number[] = [];
    let deltas: number[] = [];
    let probeNats: number[] = [];
    let tfNats: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      started = performance.now();
      const results = await probe.score(requests);
      probeRates.push(fed / ((performance.now() - started) / 1000));
      const answer = await tf.request<Scored>({ op: 'score', items: tfItems });
      tfRates.push(answer.fed / answer.seconds);
      if (answer.fed !== fed || answer.tokens.some((t, i) => t !== results[i]![0]!.tokens.length))
        throw new Error(`${label}: transformers fed ${answer.fed} tokens (probe ${fed}) or split an item differently`);
      if (rep === 0) {
        probeNats = results.map((r) => -sum(r[0]!.tokenLogprobs));
        tfNats = answer.nats.map((n) => -n);
        deltas = probeNats.map((n, i) => Math.abs(n - tfNats[i]!));
      }
    }
    const worst = deltas.indexOf(Math.max(...deltas));
    console.log(
      `(1) scoring ${scored.length} items, ${fed} tokens fed (${continuation} scored): probe ${median(probeRates).toFixed(0)} tok/s, transformers ${median(tfRates).toFixed(0)} tok/s → probe / transformers ${ratioLine(probeRates, tfRates)} (goal ≥ 1.5×)`,
    );
    console.log(
      `    agreement: max |Δ nats| per item ${deltas[worst]!.toExponential(1)} (${scored[worst]!.id}), median ${median(deltas).toExponential(1)}; token counts identical${reference ? `; vs reference-logprobs.json (transformers 5.17, nats_nobos): probe ${maxOff(probeNats, scored, reference).toExponential(1)}, transformers ${maxOff(tfNats, scored, reference).toExponential(1)}` : ''}`,
    );

    // (1b) Patch MCQ: every option of an item scored. probe feeds the context once for all of them; transformers, as
    // lm-evaluation-harness's HF model does for continuations longer than a token, runs one pass per (context, option).
    const options = sum(mcq.map((m) => m.options.length));
    const mcqRequests = mcq.map((m) => ({ context: m.context, continuations: m.options }));
    const mcqTf = mcq.flatMap((m) => m.options.map((option) => ({ context: m.context, continuation: option })));
    const probeMcq: number[] = [];
    const tfMcq: number[] = [];
    let mcqDelta = 0;
    for (let rep = 0; rep < reps; rep++) {
      started = performance.now();
      const results = await probe.score(mcqRequests);
      probeMcq.push(options / ((performance.now() - started) / 1000));
      const answer = await tf.request<Scored>({ op: 'score', items: mcqTf });
      tfMcq.push(options / answer.seconds);
      if (rep === 0) {
        const flat = results.flat().map((r) => -sum(r.tokenLogprobs));
        mcqDelta = Math.max(...flat.map((n, i) => Math.abs(n + answer.nats[i]!)));
      }
    }
    console.log(
      `(1b) Patch MCQ, ${mcq.length} items, ${options} options: probe ${median(probeMcq).toFixed(1)} options/s, transformers (a pass per option, as lm-eval's hf model) ${median(tfMcq).toFixed(1)} options/s → probe / transformers ${ratioLine(probeMcq, tfMcq)}; max |Δ nats| per option ${mcqDelta.toExponential(1)}`,
    );

    const probeSampling: number[] = [];
    const tfSampling: number[] = [];
    for (let rep = 0; rep < reps; rep++) {
      probeSampling.push((await sampleRate(probe, rep)).rate);
      const answer = await tf.request<{ seconds: number; tokens: number }>({
        op: 'sample',
        prompts: promptsOf(rep),
        n: 8,
        maxTokens: 64,
        seed: 100 * rep,
      });
      tfSampling.push(answer.tokens / answer.seconds);
    }
    console.log(
      `(2) sampling 1 prompt × 8 samples × ≤ 64 tokens a rep: probe ${median(probeSampling).toFixed(0)} tok/s, transformers generate ${median(tfSampling).toFixed(0)} tok/s → probe / transformers ${ratioLine(probeSampling, tfSampling)}`,
    );
  } finally {
    await tf.close();
    await probe.close();
  }
}

interface RssReport {
  /** VmHWM. */
  peakRssMb: number;
  /** getrusage's maxrss. */
  maxrssMb: number;
  tokens: number;
  ms: number;
}

function probeRss(dir: string, itemFile: string): RssReport & { loadMs: number } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'hf-rss-child.ts'), dir, itemFile], {
    encoding: 'utf8',
    cwd: REPO_ROOT,
  });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as RssReport & { loadMs: number };
}

const tfRss = (dir: string, itemFile: string) =>
  helper(['rss', dir, String(threads), itemFile]) as unknown as RssReport & { loadSeconds: number };

function weightBytes(dir: string): number {
  return sum([...readSafetensors(dir).tensors.values()].map((t) => t.shape.reduce((a, b) => a * b, 1) * 4));
}

function kvBytes(dir: string, tokens: number): number {
  const c = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number>;
  const heads = c.num_attention_heads!;
  const headDim = c.head_dim ?? c.hidden_size! / heads;
  return c.num_hidden_layers! * 2 * (c.num_key_value_heads ?? heads) * headDim * tokens * 4;
}

/** Section (3). */
function peakRss(dirs: Record<string, string>): void {
  const scratch = mkdtempSync(join(tmpdir(), 'probe-bench-hf-rss-'));
  try {
    // About 1K tokens of the reference contexts, then the first demo item's gold.
    const tokenizer = new CheckpointTokenizer(readTokenizerDir(TINY));
    const ids = tokenizer.encode(items.map((item) => item.context).join('\n\n'));
    const itemFile = join(scratch, 'item.json');
    writeFileSync(itemFile, JSON.stringify({ context: tokenizer.decode(ids.slice(0, 1000)), continuation: demo[0]!.gold }));
    const mb = (bytes: number) => bytes / 2 ** 20;
    const baseline = { probe: probeRss(TINY, itemFile), transformers: tfRss(TINY, itemFile) };
    console.log(
      `\n(3) peak RSS opening a directory and scoring one ${baseline.probe.tokens}-token context (one child process each); baseline = the same on llama-bpe8k-s1500: probe ${baseline.probe.peakRssMb.toFixed(0)} MiB, transformers ${baseline.transformers.peakRssMb.toFixed(0)} MiB (VmHWM; getrusage maxrss, which holds this process's RSS at the fork, says ${baseline.probe.maxrssMb.toFixed(0)} and ${baseline.transformers.maxrssMb.toFixed(0)} MiB)`,
    );
    for (const [label, dir] of Object.entries(dirs)) {
      const weights = weightBytes(dir);
      const kv = kvBytes(dir, baseline.probe.tokens);
      const budget = mb(weights + kv);
      const runs = { probe: probeRss(dir, itemFile), transformers: tfRss(dir, itemFile) };
      console.log(`    ${label}: fp32 weights ${mb(weights).toFixed(0)} MiB + KV ${mb(kv).toFixed(1)} MiB = ${budget.toFixed(0)} MiB`);
      for (const [engine, run] of Object.entries(runs)) {
        const above = run.peakRssMb - baseline[engine as keyof typeof baseline].peakRssMb;
        const load = 'loadMs' in run ? run.loadMs / 1000 : run.loadSeconds;
        console.log(
          `      ${engine.padEnd(12)} peak ${run.peakRssMb.toFixed(0).padStart(5)} MiB, − baseline ${above.toFixed(0).padStart(5)} MiB → ${(above / budget).toFixed(2)}× weights + KV (goal ≤ 1.5); load ${load.toFixed(1)} s, score ${(run.ms / 1000).toFixed(1)} s`,
        );
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Section (4). */
async function versusLlamaCpp(): Promise<void> {
  let started = performance.now();
  let llama: CompletionBackend;
  try {
    llama = await openBackend(GGUF);
  } catch (error) {
    console.log(`\n(4) llama-server could not start here: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    return;
  }
  const llamaLoad = (performance.now() - started) / 1000;
  started = performance.now();
  const probe = await OnnxBackend.open(TINY, { reusePrompts: false });
  const probeLoad = (performance.now() - started) / 1000;
  try {
    await probe.sample([sampleRequest(WARM_PROMPT, 7, 8)]);
    await llama.sample([sampleRequest(WARM_PROMPT, 7, 8)]);
    const ours: number[] = [];
    const theirs: number[] = [];
    let errors = 0;
    for (let rep = 0; rep < reps; rep++) {
      ours.push((await sampleRate(probe, rep)).rate);
      const their = await sampleRate(llama, rep);
      theirs.push(their.rate);
      errors += their.errors;
    }
    console.log(
      `\n(4) llama.cpp, llama-bpe8k-s1500 (llama-server on the f32 GGUF started in ${llamaLoad.toFixed(1)} s; probe opened in ${probeLoad.toFixed(1)} s), the sampling of (2): probe ${median(ours).toFixed(0)} tok/s, llama.cpp ${median(theirs).toFixed(0)} tok/s → probe / llama.cpp ${ratioLine(ours, theirs)} (goal ≥ 1.0×)${errors ? `; ${errors} llama.cpp samples came back as errors (not UTF-8), their tokens not counted` : ''}`,
    );
  } finally {
    await probe.close();
    await llama.close();
  }
}

const made = helper(['make', join(tmpdir(), 'probe-bench-hf'), TINY]) as { made: boolean; fp32: string; bf16: string };
const BIG = made.fp32;
const scoredBig = bigItems > 0 ? items.slice(0, bigItems) : demo;
const bigParams = sum([...readSafetensors(BIG).tensors.values()].map((t) => t.shape.reduce((a, b) => a * b, 1)));
console.log(
  `threads: onnxruntime's default intra-op pool, one per physical core = ${threads}; torch.set_num_threads(${threads}); transformers fp32 on CPU, SDPA attention, torch.inference_mode; ${reps} reps, A then B in each, medians`,
);
console.log(
  `checkpoints: ${TINY}; ${BIG} (${(bigParams / 1e6).toFixed(1)} M parameters, random init, seed 0${made.made ? ', made now' : ', cached'}) and its bf16 copy ${made.bf16}`,
);
await versusTransformers('llama-bpe8k-s1500 (1.8 M parameters)', TINY, items, mcqItems, referenceNats('llama-bpe8k-s1500'));
await versusTransformers(
  `llama-100m fp32 (${(bigParams / 1e6).toFixed(0)} M parameters)`,
  BIG,
  scoredBig,
  mcqItems.slice(0, bigItems > 0 ? bigItems : 6),
);
peakRss({ 'llama-100m fp32': BIG, 'llama-100m bf16': made.bf16 });
await versusLlamaCpp();
