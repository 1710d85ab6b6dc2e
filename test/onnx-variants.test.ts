/**
 * The layouts real exports come in (onnx-community, optimum-cli), each made from the real
 * export ../shared/models/llama-bpe8k-s250 as the real tools make them
 * (scripts/checkpoints/real-variants.ts) and scored on real probe items:
 *
 * - layout only (external weights, no position_ids input, num_logits_to_keep /
 *   logits_to_keep): the same numbers as HF transformers, within 1e-4 nats per item;
 * - dtype variants picked with `dtype` (fp16 with a float16 cache and logits, q8 =
 *   model_quantized.onnx, uint8, q4, q4f16, bnb4): agree with float32 within the tolerances measured
 *   and written down in docs/checkpoints.md, with room to spare.
 */
import { existsSync, readFileSync } from 'node:fs';
import { ResultCache } from '../src/backends/cache.ts';
import { directoryFingerprint, openBackend } from '../src/backends/open.ts';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkpointShell,
  dequantized,
  quantizeBnb4,
  quantizeInt8,
  quantizeQ4,
  readModel,
  toFloat16,
  withLogitsToKeep,
  withoutPositionIds,
  writeModel,
} from '../scripts/checkpoints/real-variants.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { readCheckpointDir } from '../src/backends/checkpoint-dir.ts';
import type { Dtype } from '../src/backends/onnx/dtype.ts';
import { OnnxGraph } from '../src/backends/onnx/graph.ts';
import { scoreContinuation } from '../src/backends/single.ts';
import { InputError } from '../src/errors.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { tempDir } from './helpers/paths.ts';

const MODELS = join(import.meta.dirname, '..', '..', 'shared', 'models');
const SOURCE = join(MODELS, 'llama-bpe8k-s250');
const present = existsSync(join(SOURCE, 'onnx', 'model.onnx'));

/** The four shortest items (337–469 tokens with their context): enough to compare, fast on two cores. */
const ITEMS = ['demo-04', 'demo-02', 'demo-03', 'demo-01'];

/** Per item: |Δ nats| against float32, and |Δ bpb| over the items together (docs/checkpoints.md: measured, then ×2–4). */
const TOLERANCE = {
  fp16: { nats: 0.1, bpb: 0.002 },
  q8: { nats: 1.5, bpb: 0.01 },
  uint8: { nats: 1.5, bpb: 0.01 },
  q4: { nats: 7, bpb: 0.03 },
  q4f16: { nats: 7, bpb: 0.03 },
  bnb4: { nats: 16, bpb: 0.1 },
} as const;

interface Item {
  context: string;
  gold: string;
}
interface Scored {
  nats: number;
  bytes: number;
}

describe.runIf(present)('real export layouts and dtype variants (llama-bpe8k-s250)', () => {
  const items = present ? (JSON.parse(readFileSync(join(MODELS, 'reference-items.json'), 'utf8')) as Record<string, Item>) : {};
  const reference = present
    ? (
        JSON.parse(readFileSync(join(MODELS, 'reference-logprobs.json'), 'utf8')) as {
          models: Record<string, { items: Record<string, { nats_nobos: number }> }>;
        }
      ).models['llama-bpe8k-s250']!.items
    : {};
  /** One directory with every dtype variant, as onnx-community ships them; one per layout variant. */
  let variants = '';
  let layouts: Record<'external' | 'noPositions' | 'numLogitsToKeep' | 'logitsToKeep' | 'q4Dequantized' | 'bnb4Dequantized', string> = {
    external: '',
    noPositions: '',
    numLogitsToKeep: '',
    logitsToKeep: '',
    q4Dequantized: '',
    bnb4Dequantized: '',
  };
  let fp32: Scored[] = [];

  async function scoreAll(dir: string, dtype?: Dtype): Promise<Scored[]> {
    const backend = await OnnxBackend.open(dir, dtype ? { dtype } : {});
    try {
      const scored: Scored[] = [];
      for (const id of ITEMS) {
        const result = await scoreContinuation(backend, items[id]!.context, items[id]!.gold);
        scored.push({ nats: -result.tokenLogprobs.reduce((a, b) => a + b, 0), bytes: result.bytes });
      }
      return scored;
    } finally {
      await backend.close();
    }
  }

  const bpb = (scored: Scored[]) => scored.reduce((a, s) => a + s.nats, 0) / (Math.LN2 * scored.reduce((a, s) => a + s.bytes, 0));

  function expectReference(scored: Scored[]): void {
    scored.forEach((s, i) => expect(Math.abs(s.nats - reference[ITEMS[i]!]!.nats_nobos), ITEMS[i]).toBeLessThan(1e-4));
  }

  beforeAll(async () => {
    const base = readModel(join(SOURCE, 'onnx', 'model.onnx'));
    const root = tempDir('probe-variants-');
    const onnxDir = checkpointShell(SOURCE, join(root, 'variants'));
    // fp32 and fp16 with their weights in model*.onnx_data, as exports past 2 GB must be.
    writeModel(base, join(onnxDir, 'model.onnx'), { external: true });
    const half = toFloat16(base);
    writeModel(half, join(onnxDir, 'model_fp16.onnx'), { external: true });
    writeModel(quantizeInt8(base), join(onnxDir, 'model_quantized.onnx'));
    writeModel(quantizeInt8(base, 'uint8'), join(onnxDir, 'model_uint8.onnx'));
    writeModel(quantizeQ4(base), join(onnxDir, 'model_q4.onnx'));
    writeModel(quantizeQ4(half), join(onnxDir, 'model_q4f16.onnx'));
    writeModel(quantizeBnb4(base), join(onnxDir, 'model_bnb4.onnx'));
    variants = join(root, 'variants');
    const layout = (name: string, model: ReturnType<typeof readModel>) => {
      writeModel(model, join(checkpointShell(SOURCE, join(root, name)), 'model.onnx'));
      return join(root, name);
    };
    layouts = {
      external: variants,
      noPositions: layout('no-positions', withoutPositionIds(base)),
      numLogitsToKeep: layout('num-logits-to-keep', withLogitsToKeep(withoutPositionIds(base))),
      logitsToKeep: layout('logits-to-keep', withLogitsToKeep(base, 'logits_to_keep')),
      q4Dequantized: layout('q4-dequantized', dequantized(base, 'q4')),
      bnb4Dequantized: layout('bnb4-dequantized', dequantized(base, 'bnb4')),
    };
    fp32 = await scoreAll(variants);
  }, 60_000);

  it('scores fp32 with external weights (model.onnx + model.onnx_data) as HF transformers does, within 1e-4 nats per item', () => {
    expect(existsSync(join(variants, 'onnx', 'model.onnx_data'))).toBe(true);
    expectReference(fp32);
  });

  it('scores a graph without position_ids (positions from the mask, in-graph) within 1e-4 nats of HF transformers', async () => {
    const files = readCheckpointDir(layouts.noPositions);
    const graph = await OnnxGraph.load(files);
    await graph.close();
    expect(readModel(files.modelPath).graph!.input!.map((i) => i.name)).not.toContain('position_ids');
    expectReference(await scoreAll(layouts.noPositions));
  });

  it('feeds num_logits_to_keep and logits_to_keep: 0 gives every row, 1 the last one alone; scores within 1e-4 nats of HF transformers', async () => {
    for (const dir of [layouts.numLogitsToKeep, layouts.logitsToKeep]) {
      const graph = await OnnxGraph.load(readCheckpointDir(dir));
      try {
        const ids = [12, 345, 6, 789, 10];
        const all = await graph.forward(ids, undefined);
        const last = await graph.forward(ids, undefined, 1, 'last');
        expect(all.logits.length).toBe(ids.length * graph.vocab);
        expect(last.logits.length).toBe(graph.vocab);
        expect(Array.from(last.logits)).toEqual(Array.from(all.logits.subarray((ids.length - 1) * graph.vocab)));
      } finally {
        await graph.close();
      }
      expectReference(await scoreAll(dir));
    }
  });

  it('runs fp16 (float16 weights, cache and logits) through the float16 cache, within the stated tolerance of fp32', async () => {
    const graph = await OnnxGraph.load(readCheckpointDir(variants, 'fp16'));
    try {
      const first = await graph.forward([12, 345], undefined);
      expect(first.cache!.tensors['past_key_values.0.key']!.type).toBe('float16');
      const next = await graph.forward([6], first.cache);
      expect(next.cache!.length).toBe(3);
      expect(next.logits).toBeInstanceOf(Float32Array);
    } finally {
      await graph.close();
    }
    expectWithin('fp16', await scoreAll(variants, 'fp16'));
    // The owned sampling loop feeds the prompt (last row only) and then one token at a time through the float16 cache.
    const backend = await OnnxBackend.open(variants, { dtype: 'fp16' });
    try {
      const [samples] = await backend.sample([
        { prompt: items[ITEMS[0]!]!.context, n: 1, temperature: 0, topP: 1, maxTokens: 12, stop: [], seed: 0 },
      ]);
      expect(samples![0]!.tokens.length).toBeGreaterThan(0);
      expect(samples![0]!.tokenLogprobs!.every((lp) => Number.isFinite(lp) && lp <= 0)).toBe(true);
    } finally {
      await backend.close();
    }
  });

  it('runs q8 (model_quantized.onnx: dynamic int8 MatMulInteger) and uint8 (asymmetric uint8 weights) within the stated tolerance of fp32', async () => {
    expectWithin('q8', await scoreAll(variants, 'q8'));
    expectWithin('uint8', await scoreAll(variants, 'uint8'));
  });

  /** A 4-bit graph scores as fp32 run over the weights it packs, dequantized: onnxruntime reads the packing as it was written. */
  async function expectReadAsPacked(dtype: Dtype, dequantizedDir: string): Promise<Scored[]> {
    const packed = await scoreAll(variants, dtype);
    const dequantized = await scoreAll(dequantizedDir);
    packed.forEach((s, i) => expect(Math.abs(s.nats - dequantized[i]!.nats), ITEMS[i]).toBeLessThan(1e-3));
    return packed;
  }

  it('reads q4 (MatMulNBits) as packed: equal to fp32 with the dequantized weights; within the stated tolerance of fp32', async () => {
    // Measured ≤ 1.6e-5 nats per item: onnxruntime reads the blocks, nibbles, scales and zero points as packQ4 writes them.
    expectWithin('q4', await expectReadAsPacked('q4', layouts.q4Dequantized));
    expectWithin('q4f16', await scoreAll(variants, 'q4f16'));
  });

  it('reads bnb4 (MatMulBnb4, NF4) as packed: equal to fp32 with the dequantized weights; within the stated tolerance of fp32', async () => {
    // Measured ≤ 9.3e-6 nats per item.
    expectWithin('bnb4', await expectReadAsPacked('bnb4', layouts.bnb4Dequantized));
  });

  it('names the variants a directory has when the asked one is missing', () => {
    const error = (() => {
      try {
        readCheckpointDir(variants, 'int8');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).location).toEqual({ file: join(variants, 'onnx', 'model_int8.onnx'), field: '--dtype' });
    expect((error as InputError).message).toContain(
      'it has fp32 (onnx/model.onnx), fp16 (onnx/model_fp16.onnx), q8 (onnx/model_quantized.onnx), uint8 (onnx/model_uint8.onnx), q4 (onnx/model_q4.onnx), q4f16 (onnx/model_q4f16.onnx), bnb4 (onnx/model_bnb4.onnx)',
    );
  });

  it('keys the result cache by dtype: fp16 of a directory never answers from its fp32 entries', async () => {
    expect(directoryFingerprint(variants, 'fp16')).not.toBe(directoryFingerprint(variants, 'fp32'));
    const cache = new ResultCache(tempDir('probe-variants-cache-'));
    const { context, gold } = items[ITEMS[0]!]!;
    const scoreWith = async (dtype: Dtype) => {
      const backend = await openBackend(variants, { cache, dtype });
      try {
        return -(await scoreContinuation(backend, context, gold)).tokenLogprobs.reduce((a, b) => a + b, 0);
      } finally {
        await backend.close();
      }
    };
    const first = await scoreWith('fp32');
    const half = await scoreWith('fp16');
    expect(cache.stats).toMatchObject({ hits: 0, misses: 2 });
    expect(half).not.toBe(first);
    expect(await scoreWith('fp16')).toBe(half);
    expect(cache.stats).toMatchObject({ hits: 1, misses: 2 });
  });

  it('probe bpb --dtype: runs the chosen graph, records it in run.json; a missing one is a one-line error naming those present', () => {
    const out = join(tempDir('probe-variants-run-'), 'run');
    const run = runProbe([
      'bpb',
      '--ckpt',
      variants,
      '--dtype',
      'q4',
      '--probes',
      'probes/demo.jsonl',
      '--limit',
      '2',
      '--no-cache',
      '--out',
      out,
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as { config: Record<string, unknown> };
    expect(manifest.config.dtype).toBe('q4');
    const missing = runProbe(['bpb', '--ckpt', variants, '--dtype', 'int8', '--probes', 'probes/demo.jsonl', '--limit', '1', '--no-cache']);
    expectOneLineError(missing, /model_int8\.onnx: field "--dtype": file is missing .*it has fp32 \(onnx\/model\.onnx\), fp16/);
  }, 60_000);

  function expectWithin(dtype: keyof typeof TOLERANCE, scored: Scored[]): void {
    const deltas = scored.map((s, i) => Math.abs(s.nats - fp32[i]!.nats));
    const dBpb = Math.abs(bpb(scored) - bpb(fp32));
    // Printed so the measured numbers in docs/checkpoints.md can be checked against a run.
    process.stderr.write(
      `${dtype}: max |Δ nats| per item ${Math.max(...deltas).toFixed(4)}, |Δ bpb| ${dBpb.toFixed(5)} (fp32 bpb ${bpb(fp32).toFixed(4)})\n`,
    );
    deltas.forEach((d, i) => expect(d, ITEMS[i]).toBeLessThan(TOLERANCE[dtype].nats));
    expect(dBpb).toBeLessThan(TOLERANCE[dtype].bpb);
    // Quantization moves the numbers, but not by nothing: a variant silently running the fp32 graph would show Δ = 0.
    expect(Math.max(...deltas)).toBeGreaterThan(1e-4);
  }
});
