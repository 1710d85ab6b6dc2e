/**
 * The onnxruntime log-softmax used for scoring (log-softmax.ts) against the float64 JS
 * reference (logits.ts `logSoftmaxAt`): within the stated 1e-7 nats per token, with the
 * identical argmax (first maximum), on random rows and on real logits rows, up to a
 * 151,936-token vocabulary; and the backend's chunk-by-chunk scoring against it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeModel, readModel, resizeVocab } from '../scripts/checkpoints/real-graph.ts';
import { logSoftmaxAt } from '../src/backends/logits.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { LogSoftmaxSession } from '../src/backends/onnx/log-softmax.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { createRng } from '../src/util/rng.ts';
import { CKPT, DEMO_PROBES } from './helpers/paths.ts';

/** The bound log-softmax.ts states for its default ('mixed') precision. */
const BOUND = 1e-7;
const REAL = join(REPO_ROOT, '..', 'shared', 'models', 'llama-bpe8k-s250');
const hasReal = existsSync(join(REAL, 'onnx', 'model.onnx'));

let rows: LogSoftmaxSession;
beforeAll(async () => {
  rows = await LogSoftmaxSession.create();
});
afterAll(async () => {
  await rows.close();
});

/** Every row of `logits` scored both ways, compared. */
async function expectAgreement(logits: Float32Array, vocab: number, targets: number[]): Promise<void> {
  const got = await rows.score(logits, 0, vocab, targets);
  targets.forEach((target, r) => {
    const want = logSoftmaxAt(logits, r * vocab, vocab, target);
    expect(Math.abs(got.logprob[r]! - want.logprob)).toBeLessThan(BOUND);
    expect(Math.abs(got.argmaxLogprob[r]! - want.argmaxLogprob)).toBeLessThan(BOUND);
    expect(got.argmax[r]).toBe(want.argmax);
  });
}

describe('onnxruntime log-softmax vs the float64 JS reference', () => {
  it('agrees on random rows at 8K, 32K and 152K vocabularies, ties going to the first maximum', async () => {
    for (const vocab of [257, 8192, 32_000, 151_936]) {
      const rng = createRng('log-softmax-test', 1, vocab);
      const count = 12;
      const logits = new Float32Array(count * vocab);
      for (let i = 0; i < logits.length; i++) logits[i] = (rng.next() + rng.next() + rng.next() - 1.5) * 8;
      // Row 0: a tie for the maximum; row 1: one very peaked token; row 2: all equal.
      logits[7] = 40;
      logits[vocab - 3] = 40;
      logits[vocab + 5] = 60;
      logits.fill(-3.5, 2 * vocab, 3 * vocab);
      const targets = Array.from({ length: count }, (_, r) => (r === 0 ? vocab - 3 : r === 1 ? 5 : Math.floor(rng.next() * vocab)));
      await expectAgreement(logits, vocab, targets);
      const got = await rows.score(logits, 0, vocab, targets);
      expect(got.argmax[0]).toBe(7);
      expect(got.argmax[2]).toBe(0);
    }
  });

  it('scores rows from the middle of a buffer (a chunk view, not a copy)', async () => {
    const vocab = 1000;
    const logits = Float32Array.from({ length: 5 * vocab }, (_, i) => Math.sin(i) * 10);
    const got = await rows.score(logits, 3, vocab, [17, 400]);
    expect(Math.abs(got.logprob[0]! - logSoftmaxAt(logits, 3 * vocab, vocab, 17).logprob)).toBeLessThan(BOUND);
    expect(Math.abs(got.logprob[1]! - logSoftmaxAt(logits, 4 * vocab, vocab, 400).logprob)).toBeLessThan(BOUND);
    await expect(rows.score(logits, 4, vocab, [1, 2])).rejects.toThrow(/overrun/);
    await expect(rows.score(logits, 0, vocab, [vocab])).rejects.toThrow(/outside/);
  });

  it.skipIf(!hasReal)(
    'agrees on real logits rows of llama-bpe8k-s250, as shipped and resized to 151,936 logits',
    async () => {
      const text = readFileSync(join(REPO_ROOT, 'src', 'backends', 'logits.ts'), 'utf8');
      const backend = await OnnxBackend.open(REAL);
      const ids = backend.encode(text).slice(0, 96);
      await backend.close();
      const original = readModel(join(REAL, 'onnx', 'model.onnx'));
      for (const vocab of [8192, 151_936]) {
        const model = vocab === 8192 ? original : resizeVocab(original, vocab);
        const session = await ort.InferenceSession.create(encodeModel(model), { logSeverityLevel: 3 });
        const n = ids.length;
        const feeds: Record<string, ort.Tensor> = {
          input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, n]),
          attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map((_, i) => BigInt(i))), [1, n]),
        };
        for (const meta of session.inputMetadata) {
          if (meta.name.startsWith('past_key_values') && meta.isTensor)
            feeds[meta.name] = new ort.Tensor('float32', new Float32Array(0), [1, meta.shape[1] as number, 0, meta.shape[3] as number]);
        }
        const logits = (await session.run(feeds)).logits!.data as Float32Array;
        expect(logits.length).toBe(n * vocab);
        await expectAgreement(logits.subarray(0, (n - 1) * vocab), vocab, ids.slice(1));
        await session.release();
      }
    },
    120_000,
  );
});

describe('backend scoring through the onnxruntime log-softmax', () => {
  const items = loadProbeItems(DEMO_PROBES);

  it('scores the same when a continuation spans many chunks, each scored as it returns', async () => {
    const backend = await OnnxBackend.open(CKPT.attention);
    // A small chunk size makes the continuation span several chunks, each scored as it returns.
    const chunked = await OnnxBackend.open(CKPT.attention, { chunkSize: 3 });
    const request = { context: items[0]!.context, continuations: [items[0]!.gold] };
    const whole = (await backend.score([request]))[0]![0]!;
    const pieces = (await chunked.score([request]))[0]![0]!;
    expect(pieces.tokens).toEqual(whole.tokens);
    expect(pieces.argmax!.map((a) => a.token)).toEqual(whole.argmax!.map((a) => a.token));
    expect(pieces.greedy).toBe(whole.greedy);
    pieces.tokenLogprobs.forEach((lp, i) => expect(Math.abs(lp - whole.tokenLogprobs[i]!)).toBeLessThan(1e-4));
    await backend.close();
    await chunked.close();
  });

  it('promptLogprobsBatch scores each prompt at its own positions, as promptLogprobs does alone', async () => {
    const backend = await OnnxBackend.open(CKPT.attention, { chunkSize: 7 });
    const prompts = [items[0]!.gold, items[1]!.context.slice(-300), 'ls -la'].map((t) => backend.encode(t));
    const batched = await backend.promptLogprobsBatch(prompts);
    for (const [b, ids] of prompts.entries()) {
      const alone = await backend.promptLogprobs(ids);
      expect(batched[b]!.tokens).toEqual(alone.tokens);
      expect(batched[b]!.argmax!.map((a) => a.token)).toEqual(alone.argmax!.map((a) => a.token));
      batched[b]!.tokenLogprobs.forEach((lp, i) => expect(Math.abs(lp - alone.tokenLogprobs[i]!)).toBeLessThan(1e-4));
    }
    await backend.close();
  });
});
