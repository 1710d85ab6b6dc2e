/**
 * probe's shared-prefix decode graph (onnx/prefix-decoder.ts): which checkpoints get it,
 * that what it computes is what the checkpoint's own graph computes (checked through the
 * exact scoring path, an independent route to the same numbers), that a row's numbers
 * do not depend on its batch, and that a checkpoint it does not fit samples through its
 * own graph exactly as before.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { KvCache } from '../src/backends/onnx/graph.ts';
import { llamaModel, type LlamaExport, type Weight } from '../src/backends/onnx/llama-export.ts';
import { PrefixDecoder } from '../src/backends/onnx/prefix-decoder.ts';
import type { SampleRequest } from '../src/backends/types.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { createRng } from '../src/util/rng.ts';
import { CKPT } from './helpers/paths.ts';

const SHARED = join(REPO_ROOT, '..', 'shared', 'models');
const REAL = ['llama-bpe8k-s40', 'llama-bpe8k-s250', 'llama-bpe8k-s1500'].map((name) => join(SHARED, name)).filter(existsSync);
const IMPORTED = ['llama-bpe8k-s40', 'llama-bpe8k-s1500'].map((name) => join(EMBEDDED_CHECKPOINTS, name));
const longContext = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => (JSON.parse(l) as { context: string }).context)
  .sort((a, b) => b.length - a.length)[0]!;

const temp: string[] = [];
afterAll(() => {
  for (const dir of temp) rmSync(dir, { recursive: true, force: true });
});

describe('which checkpoints sample through the decode graph', () => {
  it.each([...REAL, ...IMPORTED].map((dir) => [relative(join(REPO_ROOT, '..'), dir), dir]))(
    '%s: recognised, and within 1e-4 of its own graph on the check sequence',
    async (_name, dir) => {
      const backend = await OnnxBackend.open(dir);
      try {
        const info = await backend.decodeInfo();
        expect(info).toMatchObject({ decoder: true });
        if (info.decoder) expect(info.agreement).toBeLessThan(1e-4);
        await backend.sample([{ prompt: 'import os\n', n: 1, temperature: 1, topP: 1, maxTokens: 4, stop: [], seed: 0 }]);
        expect((await backend.samplerSettings({ temperature: 1, topP: 1 })).decode).toBe('shared-prefix decode graph');
      } finally {
        await backend.close();
      }
    },
  );

  it('a graph that is not a Llama export samples through its own graph, and says why', async () => {
    const backend = await OnnxBackend.open(CKPT.attention);
    try {
      expect(await backend.decodeInfo()).toEqual({
        decoder: false,
        reason: 'not a recognised Llama export: model_type is "probe-attention", not "llama"',
      });
      await backend.sample([{ prompt: 'ls\n', n: 1, temperature: 1, topP: 1, maxTokens: 2, stop: [], seed: 0 }]);
      expect(String((await backend.samplerSettings({ temperature: 1, topP: 1 })).decode)).toMatch(/^checkpoint graph \(not a recognised/);
    } finally {
      await backend.close();
    }
  });

  it('an export whose config.json misstates it (RoPE θ) fails the check and samples exactly as its own graph does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'probe-rope-'));
    temp.push(dir);
    cpSync(IMPORTED[0]!, dir, { recursive: true });
    const configFile = join(dir, 'config.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    config.rope_parameters = { ...config.rope_parameters, rope_theta: 500_000 };
    writeFileSync(configFile, JSON.stringify(config));
    const checked = await OnnxBackend.open(dir);
    const own = await OnnxBackend.open(dir, { decode: 'graph' });
    try {
      const info = await checked.decodeInfo();
      expect(info.decoder).toBe(false);
      if (!info.decoder) expect(info.reason).toMatch(/^the decode graph's log-probs differ from the checkpoint's own by \d/);
      const request: SampleRequest = { prompt: longContext, n: 4, temperature: 1, topP: 1, maxTokens: 24, stop: [], seed: 5 };
      expect(await checked.sample([request])).toEqual(await own.sample([request]));
    } finally {
      await Promise.all([checked.close(), own.close()]);
    }
  });

  it('PROBE_DECODE takes auto or graph, and names itself otherwise', async () => {
    process.env.PROBE_DECODE = 'fast';
    try {
      await expect(OnnxBackend.open(IMPORTED[0]!)).rejects.toThrow('PROBE_DECODE=fast is not one of auto, graph');
    } finally {
      delete process.env.PROBE_DECODE;
    }
  });
});

describe.each(REAL.length ? [REAL.at(-1)!] : [IMPORTED[1]!])('what the decode graph computes (%s)', (dir) => {
  it('each sampled token has the log-prob that exact scoring of the prompt and sample gives it (1,000-token prompt, 48 steps, temperature 1 and 0.8)', async () => {
    const backend = await OnnxBackend.open(dir);
    try {
      const prompt = backend.encode(longContext);
      // At temperature 1 a token's log-prob is read off the step's softmax; otherwise off its log-softmax.
      for (const temperature of [1, 0.8]) {
        const request: SampleRequest = { prompt: '', n: 3, temperature, topP: 0.95, maxTokens: 48, stop: [], seed: 2 };
        const samples = await backend.sampleIds(prompt, request);
        expect(samples.some((s) => s.tokens.length > 40)).toBe(true);
        for (const sample of samples) {
          const scored = await backend.promptLogprobs([...prompt, ...sample.tokens]);
          const exact = scored.tokenLogprobs.slice(prompt.length - 1);
          expect(exact).toHaveLength(sample.tokens.length);
          sample.tokenLogprobs!.forEach((lp, t) => expect(Math.abs(lp - exact[t]!), `T=${temperature} token ${t}`).toBeLessThan(1e-4));
        }
      }
    } finally {
      await backend.close();
    }
  });

  it('greedy decoding gives the same tokens as the export graph', async () => {
    const decoded = await OnnxBackend.open(dir);
    const own = await OnnxBackend.open(dir, { decode: 'graph' });
    try {
      const request: SampleRequest = { prompt: longContext, n: 2, temperature: 0, topP: 1, maxTokens: 64, stop: [], seed: 0 };
      const [a] = await decoded.sample([request]);
      const [b] = await own.sample([request]);
      expect(a!.map((s) => s.tokens)).toEqual(b!.map((s) => s.tokens));
      expect(a![0]!.tokens.length).toBe(64);
    } finally {
      await Promise.all([decoded.close(), own.close()]);
    }
  });
});

describe('a row is the same bits whatever its batch', () => {
  /** A one-layer Llama of random weights: with GQA (4 heads on 2) and without (2 on 2, where a one-row product needs padding). */
  function randomExport(heads: number, kvHeads: number): LlamaExport {
    const rng = createRng('decode-graph-test', heads, kvHeads);
    const hidden = 32;
    const headDim = 8;
    const vocab = 96;
    const w = (dims: number[], around = 0): Weight => {
      const values = Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => around + (rng.next() - 0.5) * 0.6);
      return { dims, bytes: new Uint8Array(values.buffer) };
    };
    return {
      shape: { hidden, heads, kvHeads, headDim, vocab, eps: 1e-6, ropeTheta: 10_000 },
      embed: w([vocab, hidden]),
      layers: [
        {
          inputNorm: w([hidden], 1),
          q: w([hidden, heads * headDim]),
          k: w([hidden, kvHeads * headDim]),
          v: w([hidden, kvHeads * headDim]),
          o: w([heads * headDim, hidden]),
          postNorm: w([hidden], 1),
          gate: w([hidden, 48]),
          up: w([hidden, 48]),
          down: w([48, hidden]),
        },
      ],
      finalNorm: w([hidden], 1),
      head: w([hidden, vocab]),
    };
  }

  it.each([
    [4, 2],
    [2, 2],
  ])(
    '%i heads on %i KV heads: each of 3 rows equals the row computed alone, over 12 steps and after rows leave',
    async (heads, kvHeads) => {
      const model = randomExport(heads, kvHeads);
      const decoder = await PrefixDecoder.build(llamaModel(model), 'random');
      try {
        const rng = createRng('prefix', heads);
        const prompt = 37;
        const tensor = () =>
          new ort.Tensor(
            'float32',
            Float32Array.from({ length: kvHeads * prompt * 8 }, () => rng.next() - 0.5),
            [1, kvHeads, prompt, 8],
          );
        const prefix: KvCache = { tensors: { 'past_key_values.0.key': tensor(), 'past_key_values.0.value': tensor() }, length: prompt };
        // Three rows fed different tokens, and each row's tokens fed alone.
        const singles = [0, 1, 2].map(() => decoder.cohort(prefix, 1, 14));
        const three = decoder.cohort(prefix, 3, 14);
        const same = async (rows: number[], tokenOf: (row: number) => number) => {
          const many = await three.step(rows.map(tokenOf), 0.8);
          for (const [b, row] of rows.entries()) {
            const one = await singles[row]!.step([tokenOf(row)], 0.8);
            expect(Array.from(many.probs!.subarray(b * 96, (b + 1) * 96))).toEqual(Array.from(one.probs!));
            expect(Array.from(many.logprobs!.subarray(b * 96, (b + 1) * 96))).toEqual(Array.from(one.logprobs!));
          }
        };
        for (let step = 0; step < 12; step++) await same([0, 1, 2], (row) => (step * 29 + row * 7 + 3) % 96);
        // Rows that stay when another leaves keep their numbers (their cached tokens are moved, not recomputed).
        three.retain([0, 2]);
        await same([0, 2], (row) => row + 11);
        three.retain([1]);
        await same([2], () => 17);
      } finally {
        await decoder.close();
      }
    },
  );
});
