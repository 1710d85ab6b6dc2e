/** The owned sampling loop: seeds, stop strings, top-p / top-k on a real checkpoint and on a tiny vocabulary. */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PromptCaches } from '../src/backends/onnx/prompt-caches.ts';
import { chooseToken, chooseTokenFromProbs, firstMaximum } from '../src/backends/logits.ts';
import { sampleOne, scoreContinuation } from '../src/backends/single.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { SampleRequest } from '../src/backends/types.ts';
import { createRng } from '../src/util/rng.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readCheckpointDir } from '../src/backends/checkpoint-dir.ts';
import { OnnxGraph } from '../src/backends/onnx/graph.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { CKPT } from './helpers/paths.ts';

const base: SampleRequest = {
  prompt: '## Thinking\nList the files.\n<bash>\n',
  n: 4,
  temperature: 0.7,
  topP: 0.95,
  maxTokens: 40,
  stop: [],
  seed: 7,
};

describe('sampling on the embedded checkpoints', () => {
  let attention: OnnxBackend;
  let ngram: OnnxBackend;
  beforeAll(async () => {
    attention = await OnnxBackend.open(CKPT.attention);
    ngram = await OnnxBackend.open(CKPT.agent);
  });
  afterAll(async () => {
    await Promise.all([attention.close(), ngram.close()]);
  });

  it('is reproducible from the seed, and samples are independent of n', async () => {
    for (const backend of [attention, ngram]) {
      const [a] = await backend.sample([base]);
      const [b] = await backend.sample([base]);
      expect(a).toEqual(b);
      const [one] = await backend.sample([{ ...base, n: 1 }]);
      expect(one![0]).toEqual(a![0]);
      const [other] = await backend.sample([{ ...base, seed: 8 }]);
      expect(other!.map((s) => s.text)).not.toEqual(a!.map((s) => s.text));
      expect(new Set(a!.map((s) => s.text)).size).toBeGreaterThan(1);
    }
  });

  it('decodes exactly the sampled tokens and stops before a stop string', async () => {
    const stop = ['</bash>', '\n\n'];
    const [samples] = await attention.sample([{ ...base, n: 16, maxTokens: 120, temperature: 1, topP: 1, stop }]);
    let stopped = 0;
    for (const s of samples!) {
      const full = attention.decode(s.tokens);
      for (const t of stop) expect(s.text.includes(t)).toBe(false);
      if (s.finishReason === 'stop') {
        stopped++;
        expect(stop).toContain(s.stop);
        expect(full.startsWith(s.text + s.stop!)).toBe(true);
      } else if (s.finishReason === 'length') {
        expect(s.tokens).toHaveLength(120);
        expect(s.text).toBe(full);
      }
    }
    expect(stopped).toBeGreaterThan(0);
  });

  it('temperature 0 is greedy: the score of the sampled text says every token was the argmax', async () => {
    for (const backend of [attention, ngram]) {
      const [s] = await sampleOne(backend, { ...base, n: 1, temperature: 0, maxTokens: 12 });
      const score = await scoreContinuation(backend, base.prompt, s!.text);
      expect(score!.greedy).toBe(true);
    }
  });

  it('honours top_p on the real distribution (byte vocabulary)', async () => {
    // No trailing whitespace, so `score` gives the plain next-byte distribution.
    const prompt = 'def f';
    const candidates = Array.from({ length: 128 }, (_, b) => String.fromCharCode(b));
    const [scores] = await ngram.score([{ context: prompt, continuations: candidates }]);
    const probs = scores!.map((r, i) => ({ c: candidates[i]!, p: Math.exp(r.tokenLogprobs[0]!) })).sort((a, b) => b.p - a.p);
    const topP = 0.6;
    const nucleus: typeof probs = [];
    let mass = 0;
    for (const entry of probs) {
      if (mass >= topP) break;
      nucleus.push(entry);
      mass += entry.p;
    }
    const n = 3000;
    const [samples] = await ngram.sample([{ prompt, n, temperature: 1, topP, maxTokens: 1, stop: [], seed: 1 }]);
    const counts = new Map<string, number>();
    for (const s of samples!) counts.set(s.text, (counts.get(s.text) ?? 0) + 1);
    const allowed = new Set(nucleus.map((e) => e.c));
    for (const text of counts.keys()) expect(allowed.has(text)).toBe(true);
    for (const { c, p } of nucleus) {
      const expected = p / mass;
      const observed = (counts.get(c) ?? 0) / n;
      expect(Math.abs(observed - expected)).toBeLessThan(4 * Math.sqrt((expected * (1 - expected)) / n) + 1e-3);
    }
  });
});

describe('chooseToken on a tiny vocabulary', () => {
  const probs = [0.5, 0.25, 0.15, 0.07, 0.03];
  const row = Float32Array.from(probs.map(Math.log));
  const draw = (params: { temperature: number; topP: number; topK?: number }, n = 40_000) => {
    const rng = createRng('tiny', 1);
    const counts = new Array(probs.length).fill(0);
    for (let i = 0; i < n; i++) counts[chooseToken(row, params, rng)]++;
    return counts.map((c) => c / n);
  };
  const close = (observed: number[], expected: number[]) =>
    expected.forEach((e, i) => expect(Math.abs(observed[i]! - e)).toBeLessThan(0.01));

  it('samples the full distribution at temperature 1 without truncation', () => {
    close(draw({ temperature: 1, topP: 1 }), probs);
  });
  it('keeps the smallest nucleus whose mass reaches top_p', () => {
    // 0.5 + 0.25 < 0.8 ≤ 0.5 + 0.25 + 0.15
    close(draw({ temperature: 1, topP: 0.8 }), [0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0, 0]);
  });
  it('keeps the k most likely with top_k', () => {
    close(draw({ temperature: 1, topP: 1, topK: 2 }), [2 / 3, 1 / 3, 0, 0, 0]);
  });
  it('sharpens with temperature below 1', () => {
    const t = 0.5;
    const w = probs.map((p) => p ** (1 / t));
    const z = w.reduce((a, b) => a + b);
    close(
      draw({ temperature: t, topP: 1 }),
      w.map((x) => x / z),
    );
  });
  it('is greedy at temperature 0', () => {
    expect(draw({ temperature: 0, topP: 1 }, 10)).toEqual([1, 0, 0, 0, 0]);
  });
});

/** Top-k, top-p and the draw at `u` over every id sorted by a comparator (probability, then id): the reference the samplers must equal. */
function walkAllSorted(probs: Float64Array | Float32Array, topP: number, topK: number, u: number): number {
  let total = 0;
  for (const p of probs) total += p;
  const order = Array.from({ length: probs.length }, (_, i) => i).sort((a, b) => probs[b]! - probs[a]! || a - b);
  // The nucleus: the shortest head of the order (at most topK) whose running sum, taken before each id, never reaches topP.
  const running: number[] = [];
  let sum = 0;
  for (const id of order) {
    running.push(sum);
    sum += probs[id]!;
  }
  const size = Math.min(topK, order.findIndex((_, i) => i > 0 && running[i]! >= topP * total) >>> 0);
  const nucleus = order.slice(0, size);
  const mass = nucleus.reduce((sum, id) => sum + probs[id]!, 0);
  // The draw: the first id whose cumulative mass passes u × mass, subtracting as the sampler does.
  let left = u * mass;
  return nucleus.find((id) => (left -= probs[id]!) < 0) ?? nucleus.at(-1)!;
}

describe('top-p and top-k over a real-sized vocabulary', () => {
  /** The walk over the whole vocabulary sorted, as chooseToken did before it sorted only the candidates. */
  function fullSortChoice(row: Float32Array, temperature: number, topP: number, topK: number, u: number): number {
    let max = -Infinity;
    for (const v of row) if (v > max) max = v;
    return walkAllSorted(
      Float64Array.from(row, (v) => Math.exp((v - max) / temperature)),
      topP,
      topK,
      u,
    );
  }

  it('draws exactly what a sort of the whole vocabulary draws (151,936 ids; peaked, flat and tied rows)', () => {
    const vocab = 151_936;
    const gen = createRng('rows', 3);
    const rows = [
      Float32Array.from({ length: vocab }, () => gen.next() * 30 - 15), // peaked: a few ids hold the mass
      Float32Array.from({ length: vocab }, () => gen.next() * 0.5), // nearly flat: the nucleus is most of the vocabulary
      Float32Array.from({ length: vocab }, (_, i) => (i % 7 === 0 ? 2 : 0)), // ties across the cut
    ];
    for (const row of rows) {
      for (const [temperature, topP, topK] of [
        [0.7, 0.95, vocab],
        [1, 0.5, vocab],
        [1, 1, 40],
        [0.7, 0.95, 5000],
        [1.3, 0.999, vocab],
      ] as const) {
        for (let seed = 0; seed < 4; seed++) {
          const u = createRng('draw', seed).next();
          expect(
            chooseToken(row, { temperature, topP, topK }, createRng('draw', seed)),
            `T=${temperature} p=${topP} k=${topK} seed ${seed}`,
          ).toBe(fullSortChoice(row, temperature, topP, topK, u));
        }
      }
    }
  }, 120_000);
});

describe("top-p and top-k over the decode graph's float32 probabilities", () => {
  it('draws exactly what a comparator sort of the whole vocabulary draws (packed-key sort; peaked, flat, tied and zero rows)', () => {
    const vocab = 50_257;
    const gen = createRng('f32-rows', 4);
    const softmax = (logits: number[]) => {
      const max = Math.max(...logits);
      const e = logits.map((x) => Math.exp(x - max));
      const z = e.reduce((a, b) => a + b, 0);
      return Float32Array.from(e, (x) => x / z);
    };
    const rows = [
      softmax(Array.from({ length: vocab }, () => gen.next() * 30 - 15)),
      softmax(Array.from({ length: vocab }, () => gen.next() * 0.5)),
      softmax(Array.from({ length: vocab }, (_, i) => (i % 7 === 0 ? 2 : 0))), // ties across the cut
      softmax(Array.from({ length: vocab }, (_, i) => (i < 3 ? 0 : -200))), // float32 zeros past the first ids
    ];
    for (const probs of rows) {
      for (const [topP, topK] of [
        [0.95, vocab],
        [0.5, vocab],
        [1, 40],
        [0.95, 5000],
        [0.999, vocab],
      ] as const) {
        for (let seed = 0; seed < 4; seed++) {
          const u = createRng('draw', seed).next();
          expect(chooseTokenFromProbs(probs, { temperature: 0.7, topP, topK }, createRng('draw', seed))).toBe(
            walkAllSorted(probs, topP, topK, u),
          );
        }
      }
    }
  }, 120_000);

  it('greedy takes the first maximum', () => {
    expect(firstMaximum(Float32Array.from([-3, -1, -0.5, -0.5, -2]))).toBe(2);
  });
});

describe('n-gram rungs declare their receptive field', () => {
  it.each([
    ['ngram-agent', CKPT.agent],
    ['contaminated-agent', join(EMBEDDED_CHECKPOINTS, 'contaminated-agent')],
  ])('%s: the last row from the trailing tokens equals the last row from the whole sequence', async (_name, dir) => {
    const files = readCheckpointDir(dir);
    const graph = await OnnxGraph.load(files);
    try {
      const field = graph.receptiveField!;
      expect(field).toBe(files.config.probe_receptive_field);
      // A memorised md+xml transcript, so the copy memory fires where the full window matches.
      const item = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { context: string; gold: string; format: string })
        .find((i) => i.format === 'md+xml')!;
      const ids = [...new TextEncoder().encode(item.context + item.gold)].slice(0, 3000);
      const full = await graph.forward(ids, undefined);
      const tail = await graph.forward(ids.slice(ids.length - field), undefined);
      expect(tail.logits.slice((field - 1) * 257)).toEqual(full.logits.slice((ids.length - 1) * 257));
      // One token fewer than the field is not enough for the copy memory (it would differ somewhere).
      if (field > 2) {
        let differs = false;
        for (let end = field + 1; end <= ids.length && !differs; end += 97) {
          const a = await graph.forward(ids.slice(0, end), undefined);
          const b = await graph.forward(ids.slice(end - field + 1, end), undefined);
          differs = a.logits.slice((end - 1) * 257).some((v, i) => v !== b.logits[(field - 2) * 257 + i]);
        }
        expect(differs).toBe(true);
      }
    } finally {
      await graph.close();
    }
  });
});

describe('batched sampling: every sample is what it would be alone, whatever shares its passes', () => {
  const REAL = join(REPO_ROOT, '..', 'shared', 'models', 'llama-bpe8k-s1500');
  const demoContext = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { context: string }).context)
    .sort((a, b) => b.length - a.length)[0]!;
  const requests: SampleRequest[] = [
    // A long pass@K-like context at temperature 1 (tail draws decided by a logit's last bits), a short one, and a greedy one.
    { prompt: demoContext, n: 5, temperature: 1, topP: 1, maxTokens: 40, stop: [], seed: 11 },
    { prompt: 'def add(a, b):\n    return', n: 5, temperature: 0.8, topP: 0.95, maxTokens: 40, stop: ['\n\n'], seed: 3 },
    { prompt: 'import os\n', n: 2, temperature: 0, topP: 1, maxTokens: 24, stop: [], seed: 5 },
  ];

  // The real checkpoint where ../shared is present, as the other real-checkpoint tests do.
  it.each(
    [
      ['attn-agent', CKPT.attention],
      ['llama-bpe8k-s1500 (../shared/models)', REAL],
    ].filter(([, dir]) => existsSync(dir!)),
  )('%s: one call, concurrent calls and split cohorts draw bit-identical samples to one at a time', async (_name, dir) => {
    const alone = await OnnxBackend.open(dir, { sampleRows: 1 });
    const batched = await OnnxBackend.open(dir);
    const split = await OnnxBackend.open(dir, { sampleRows: 2 });
    try {
      const expected: Awaited<ReturnType<OnnxBackend['sample']>> = [];
      for (const request of requests) expected.push((await alone.sample([request]))[0]!);
      // All prompts in one call; the same as concurrent calls; cohorts of 5 split into passes of 2.
      expect(await batched.sample(requests)).toEqual(expected);
      expect(await Promise.all(requests.map(async (r) => (await batched.sample([r]))[0]!))).toEqual(expected);
      expect(await split.sample(requests)).toEqual(expected);
      // The samples differ from each other (a batch that repeated one row would pass the checks above only by luck).
      expect(new Set(expected[0]!.map((s) => s.text)).size).toBeGreaterThan(3);
    } finally {
      await Promise.all([alone.close(), batched.close(), split.close()]);
    }
  });
});

describe('prompt caches: a prompt that extends a recent one feeds only what is new, and samples as if fed whole', () => {
  const REAL = join(REPO_ROOT, '..', 'shared', 'models', 'llama-bpe8k-s1500');
  it.each(
    [
      ['attn-agent', CKPT.attention],
      ['llama-bpe8k-s1500 (../shared/models)', REAL],
    ].filter(([, dir]) => existsSync(dir!)),
  )('%s: an episode-like run of growing prompts draws bit-identical samples with and without reuse', async (_name, dir) => {
    const reusing = await OnnxBackend.open(dir);
    const fresh = await OnnxBackend.open(dir, { reusePrompts: false });
    try {
      const request = { n: 2, temperature: 1, topP: 1, maxTokens: 24, stop: ['</bash>'], seed: 9 };
      let prompt = '# Task\nFix the failing test in shop/pricing.py.\n\n## Thinking\n';
      const lookups = vi.spyOn(PromptCaches.prototype, 'lookup');
      // The prompt grows as an episode's does: a short output, a long one.
      const outputs = ['ok\n', 'def total(items):\n    return sum(i.price for i in items)\n'.repeat(12)];
      for (const [step, output] of outputs.entries()) {
        const [got] = await reusing.sample([{ ...request, prompt, seed: step }]);
        const [want] = await fresh.sample([{ ...request, prompt, seed: step }]);
        expect(got).toEqual(want);
        prompt += `${got![0]!.text}</bash>\n<observation>\n${output}</observation>\n\n## Thinking\n`;
      }
      // One token more each: a one-token remainder is never fed alone (it would round differently), one token less is reused.
      for (const more of [' at', ' at the']) {
        expect(await reusing.sample([{ ...request, prompt: prompt + more }])).toEqual(
          await fresh.sample([{ ...request, prompt: prompt + more }]),
        );
      }
      // A head of a remembered prompt (its last row must be computed), and a remembered prompt again (its cache itself).
      for (const again of [prompt, `${prompt} at the`]) {
        expect(await reusing.sample([{ ...request, prompt: again }])).toEqual(await fresh.sample([{ ...request, prompt: again }]));
      }
      // And reuse did happen: every prompt after the first continued a remembered one.
      const found = lookups.mock.results.map((r) => r.value as ReturnType<PromptCaches['lookup']>);
      expect(found.slice(1).every((f) => f !== undefined)).toBe(true);
      expect(found.filter((f) => f && 'exact' in f)).toHaveLength(1);
    } finally {
      vi.restoreAllMocks();
      await Promise.all([reusing.close(), fresh.close()]);
    }
  });
});
