/**
 * Hugging Face directories of every family probe builds, against Hugging Face
 * transformers: each tiny checkpoint of test/fixtures/hf (made by scripts/hf-fixtures.py
 * with transformers' own classes, weights drawn wide so a family's particulars move the
 * numbers) scores every reference item within 1e-4 nats of transformers' fp32 log-probs
 * with the same tokens, and greedy decoding — through the shared-prefix decode graph and
 * through the forward graph — gives transformers' tokens.
 *
 * And the fixtures can tell: the same weights built with one particular of the family
 * taken away (a sliding window, a soft cap, a rotary fraction, biases, q/k norms, the
 * block layout) miss the reference by far more than the tolerance, so a builder that got
 * one of them wrong would fail here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { rotaryOf } from '../src/backends/hf/rope.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { readCheckpointDir } from '../src/backends/checkpoint-dir.ts';
import { SESSION_OPTIONS } from '../src/backends/onnx/graph.ts';
import { openWrittenGraph } from '../src/backends/onnx/written-graph.ts';
import { buildForwardGraph } from '../src/backends/transformer/forward-graph.ts';
import { GRAPH_BUILDER_VERSION, type TransformerModel } from '../src/backends/transformer/model.ts';
import { directoryFingerprint } from '../src/backends/open.ts';
import { REPO_ROOT } from '../src/embedded.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'hf');
const TOLERANCE_NATS = 1e-4;

interface Reference {
  items: Array<{
    id: string;
    context: string;
    continuation: string;
    context_ids: number[];
    continuation_ids: number[];
    nats: number;
    greedy: boolean;
  }>;
  generate: Array<{ prompt_ids: number[]; greedy_ids: number[] }>;
}

const fixtures = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const reference = (name: string): Reference => JSON.parse(readFileSync(join(FIXTURES, name, 'reference.json'), 'utf8'));

describe('every family against transformers', () => {
  it("a Hugging Face directory's cached answers are keyed by its content and by the graph builder's version; an export's by its content", () => {
    expect(directoryFingerprint(join(FIXTURES, 'olmo2'))).toMatch(new RegExp(`^content:[0-9a-f]{64}:graph=${GRAPH_BUILDER_VERSION}$`));
    expect(directoryFingerprint(join(FIXTURES, 'olmo2'), 'fp16')).toMatch(/:graph=\d+:dtype=fp16$/);
    expect(directoryFingerprint(join(REPO_ROOT, 'checkpoints', 'llama-bpe8k-s40'))).toMatch(/^content:[0-9a-f]{64}$/);
  });

  it('the fixtures cover every family probe builds', () => {
    const types = new Set(
      fixtures.map((name) => (JSON.parse(readFileSync(join(FIXTURES, name, 'config.json'), 'utf8')) as { model_type: string }).model_type),
    );
    expect([...types].sort()).toEqual(['gemma2', 'gpt_neox', 'llama', 'mistral', 'olmo2', 'phi3', 'qwen2', 'qwen3']);
  });

  it.each(fixtures)(
    '%s: every item within 1e-4 nats with the same tokens; greedy tokens identical through both graphs',
    async (name) => {
      const ref = reference(name);
      const backend = await OnnxBackend.open(join(FIXTURES, name));
      const own = await OnnxBackend.open(join(FIXTURES, name), { decode: 'graph' });
      try {
        const results = await backend.score(ref.items.map((item) => ({ context: item.context, continuations: [item.continuation] })));
        ref.items.forEach((item, i) => {
          const got = results[i]![0]!;
          expect(got.tokens, `${item.id}: tokens`).toEqual(item.continuation_ids);
          const nats = -got.tokenLogprobs.reduce((a, b) => a + b, 0);
          expect(Math.abs(nats - item.nats), `${item.id}: |Δ nats| (${nats} vs ${item.nats})`).toBeLessThan(TOLERANCE_NATS);
          expect(got.greedy, `${item.id}: greedy`).toBe(item.greedy);
        });
        const info = await backend.decodeInfo();
        expect(info).toMatchObject({ decoder: true });
        if (info.decoder) expect(info.agreement).toBeLessThan(TOLERANCE_NATS);
        for (const [i, gen] of ref.generate.entries()) {
          const request = { prompt: '', n: 1, temperature: 0, topP: 1, maxTokens: gen.greedy_ids.length, stop: [], seed: 0 };
          for (const [path, b] of [
            ['decode graph', backend],
            ['forward graph', own],
          ] as const) {
            const [sample] = await b.sampleIds(gen.prompt_ids, request);
            expect(sample!.tokens, `prompt ${i} through the ${path}`).toEqual(gen.greedy_ids);
          }
        }
        expect(backend.engine).toMatch(/^probe in process \(onnxruntime\): .+ graph built from model\.safetensors(\.index\.json)?$/);
      } finally {
        await Promise.all([backend.close(), own.close()]);
      }
    },
    60_000,
  );
});

/** Nats of every reference item under `model` in one full pass each (the forward graph alone, no cache, no backend). */
async function itemNats(model: TransformerModel, ref: Reference): Promise<number[]> {
  const session = await openWrittenGraph(buildForwardGraph(model), SESSION_OPTIONS);
  try {
    const out: number[] = [];
    for (const item of ref.items) {
      const ids = [...item.context_ids, ...item.continuation_ids];
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]),
        position_ids: new ort.Tensor(
          'int64',
          BigInt64Array.from(ids, (_, i) => BigInt(i)),
          [1, ids.length],
        ),
        num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(0n), []),
      };
      for (let l = 0; l < model.spec.layers; l++)
        for (const kind of ['key', 'value'])
          feeds[`past_key_values.${l}.${kind}`] = new ort.Tensor('float32', new Float32Array(0), [
            1,
            model.spec.kvHeads,
            0,
            model.spec.headDim,
          ]);
      const logits = (await session.run(feeds)).logits!.data as Float32Array;
      const vocab = model.spec.vocab;
      let nats = 0;
      item.continuation_ids.forEach((token, k) => {
        const row = logits.subarray((item.context_ids.length - 1 + k) * vocab, (item.context_ids.length + k) * vocab);
        let max = -Infinity;
        for (const v of row) max = Math.max(max, v);
        let sum = 0;
        for (const v of row) sum += Math.exp(v - max);
        nats -= row[token]! - max - Math.log(sum);
      });
      out.push(nats);
    }
    return out;
  } finally {
    await session.release();
  }
}

/** One particular of each family taken away: the fixture must then miss transformers by far more than the tolerance. */
const WITHOUT: Record<string, { what: string; change: (model: TransformerModel) => void }> = {
  'llama-bias-untied': {
    what: 'the attention biases',
    change: (m) => {
      for (const layer of m.weights.layers)
        if (layer.qkv.kind === 'separate') for (const p of [layer.qkv.q, layer.qkv.k, layer.qkv.v]) delete p.bias;
    },
  },
  'llama-yarn-bf16': { what: "YaRN's attention factor", change: (m) => void (m.spec.rotary.attentionFactor = 1) },
  'llama-linear-fp16': {
    what: 'linear RoPE scaling',
    change: (m) =>
      void (m.spec.rotary = rotaryOf({ type: 'default', theta: 10000, partial: 1, params: {} }, m.spec.headDim, 256, 'config.json')),
  },
  mistral: { what: 'the sliding window', change: (m) => void (m.spec.attention.windows = m.spec.attention.windows.map(() => undefined)) },
  'qwen2-sharded': { what: 'the sliding window of layer 1', change: (m) => void (m.spec.attention.windows = [undefined, undefined]) },
  qwen3: { what: 'the per-head q/k norms', change: (m) => void (m.spec.qkNorm = 'none') },
  olmo2: { what: 'the q/k norms over the projection', change: (m) => void (m.spec.qkNorm = 'none') },
  'gpt-neox-parallel': { what: 'the parallel residual', change: (m) => void (m.spec.block = 'pre') },
  'gpt-neox-sequential': {
    what: 'the rotary fraction',
    change: (m) =>
      void (m.spec.rotary = rotaryOf({ type: 'default', theta: 10000, partial: 1, params: {} }, m.spec.headDim, 256, 'config.json')),
  },
  gemma2: { what: 'the attention soft cap', change: (m) => void delete m.spec.attention.softcap },
  phi3: {
    what: 'the partial rotary factor',
    change: (m) =>
      void (m.spec.rotary = rotaryOf({ type: 'default', theta: 10000, partial: 1, params: {} }, m.spec.headDim, 256, 'config.json')),
  },
};

describe('the fixtures tell a family’s particulars apart', () => {
  it.each(Object.keys(WITHOUT))(
    '%s',
    async (name) => {
      const ref = reference(name);
      const files = readCheckpointDir(join(FIXTURES, name));
      if (files.graph.kind !== 'built') throw new Error(`${name} is not read as a Hugging Face directory`);
      const exact = await itemNats(files.graph.model, ref);
      const worst = (nats: number[]) => Math.max(...nats.map((n, i) => Math.abs(n - ref.items[i]!.nats)));
      expect(worst(exact), 'the full pass, as built').toBeLessThan(TOLERANCE_NATS);
      WITHOUT[name]!.change(files.graph.model);
      expect(worst(await itemNats(files.graph.model, ref)), `without ${WITHOUT[name]!.what}`).toBeGreaterThan(0.01);
    },
    60_000,
  );
});
