/**
 * BPB against an independent computation: for a counted n-gram checkpoint the exact
 * log-probabilities follow from the table stored in its ONNX file, read here without
 * onnxruntime, the tokenizer or the backend.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scoreContinuation } from '../src/backends/single.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { scoreBpb } from '../src/probes/bpb.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { CKPT, DEMO_PROBES } from './helpers/paths.ts';
import { readInitializer } from './helpers/onnx-file.ts';

const model = join(CKPT.agent, 'onnx', 'model.onnx');
const table = readInitializer(model, 'ngram_logprobs');
const classes = readInitializer(model, 'token_class').values;
const VOCAB = table.dims[1]!;
const CLASSES = table.dims[0]! / VOCAB;

/** log p(next | prev, current) from the stored table, normalised as softmax does. */
function logprob(prev: number, current: number, next: number): number {
  const row = (current * CLASSES + classes[prev]!) * VOCAB;
  let max = -Infinity;
  for (let i = 0; i < VOCAB; i++) max = Math.max(max, table.values[row + i]!);
  let sum = 0;
  for (let i = 0; i < VOCAB; i++) sum += Math.exp(table.values[row + i]! - max);
  return table.values[row + next]! - max - Math.log(sum);
}

/** Nats of `continuation` after `context`, byte by byte, with the whitespace rule applied by hand. */
function exactNats(context: string, continuation: string): { nats: number; bytes: number } {
  const trimmed = context.replace(/\s+$/u, '');
  const scored = context.slice(trimmed.length) + continuation;
  const ctx = [...Buffer.from(trimmed, 'utf8')];
  const cont = [...Buffer.from(scored, 'utf8')];
  const seq = [...ctx, ...cont];
  let nats = 0;
  for (let t = ctx.length; t < seq.length; t++) {
    const prev = t >= 2 ? seq[t - 2]! : VOCAB; // VOCAB = "no previous token"
    nats -= logprob(prev, seq[t - 1]!, seq[t]!);
  }
  return { nats, bytes: cont.length };
}

describe('Decisive-Action BPB', () => {
  let backend: OnnxBackend;
  beforeAll(async () => {
    backend = await OnnxBackend.open(CKPT.agent);
  });
  afterAll(async () => {
    await backend.close();
  });

  it('equals the value computed from the checkpoint table, per item and pooled', async () => {
    const items = loadProbeItems(DEMO_PROBES);
    const result = await scoreBpb('ngram-agent', backend, items);
    let totalNats = 0;
    let totalBytes = 0;
    for (const [i, item] of items.entries()) {
      const exact = exactNats(item.context, item.gold);
      const got = result.items[i]!;
      expect(got.bytes).toBe(exact.bytes);
      expect(got.tokens).toBe(exact.bytes); // byte-level tokenizer: one token per byte
      expect(got.nats).toBeCloseTo(exact.nats, 6);
      expect(got.bpb).toBeCloseTo(exact.nats / (Math.LN2 * exact.bytes), 8);
      totalNats += exact.nats;
      totalBytes += exact.bytes;
    }
    expect(result.bpb).toBeCloseTo(totalNats / (Math.LN2 * totalBytes), 8);
    // Pooled aggregation is not the mean of per-item BPB.
    const meanOfItems = result.items.reduce((a, it) => a + it.bpb, 0) / result.items.length;
    expect(Math.abs(result.bpb - meanOfItems)).toBeGreaterThan(1e-6);
  });

  it('counts UTF-8 bytes, not characters or UTF-16 units (CJK, Hangul, emoji)', async () => {
    const cases = ['你好 👋', 'こんにちは', '안녕하세요 🚀🚀', 'naïve café'];
    for (const text of cases) {
      const r = await scoreContinuation(backend, 'print("', text);
      const exact = exactNats('print("', text);
      expect(r!.bytes).toBe(Buffer.byteLength(text, 'utf8'));
      expect(r!.bytes).toBe(exact.bytes);
      expect(-r!.tokenLogprobs.reduce((a, b) => a + b, 0)).toBeCloseTo(exact.nats, 6);
    }
    expect(Buffer.byteLength('👋', 'utf8')).toBe(4);
  });

  it('scores an empty context against the EOS token, as lm-evaluation-harness does', async () => {
    const r = await scoreContinuation(backend, '', 'ls');
    const eos = VOCAB - 1;
    const expected = -(logprob(VOCAB, eos, 'l'.charCodeAt(0)) + logprob(eos, 'l'.charCodeAt(0), 's'.charCodeAt(0)));
    expect(-r!.tokenLogprobs.reduce((a, b) => a + b, 0)).toBeCloseTo(expected, 6);
  });
});
