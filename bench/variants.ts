/**
 * What each dtype variant costs in accuracy, measured on the real exports of
 * ../shared/models (all reference items): fp16, q8 (dynamic int8), uint8, q4, q4f16 and bnb4 made by
 * scripts/checkpoints/real-variants.ts as the real tools make them, each scored against
 * the fp32 graph of the same checkpoint, and fp32 against HF transformers' reference.
 * Prints, per checkpoint and dtype: max |Δ nats| per item, mean |Δ nats| per token, and
 * |Δ bpb| over all items together. docs/checkpoints.md ("Layouts and dtypes of real exports") quotes a run.
 * Usage: npx tsx bench/variants.ts [--ckpt llama-bpe8k-s250] [--limit N]
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkpointShell,
  quantizeBnb4,
  quantizeInt8,
  quantizeQ4,
  readModel,
  toFloat16,
  writeModel,
} from '../scripts/checkpoints/real-variants.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { Dtype } from '../src/backends/onnx/dtype.ts';
import { scoreContinuation } from '../src/backends/single.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { formatTable } from '../src/report/table.ts';

const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const MODELS = join(REPO_ROOT, '..', 'shared', 'models');
const items = JSON.parse(readFileSync(join(MODELS, 'reference-items.json'), 'utf8')) as Record<string, { context: string; gold: string }>;
const reference = (
  JSON.parse(readFileSync(join(MODELS, 'reference-logprobs.json'), 'utf8')) as {
    models: Record<string, { items: Record<string, { nats_nobos: number }> }>;
  }
).models;
const checkpoints = arg('--ckpt') ? [arg('--ckpt')!] : Object.keys(reference);

interface Scored {
  id: string;
  nats: number;
  tokens: number;
  bytes: number;
}

async function scoreAll(dir: string, dtype: Dtype, ids: string[]): Promise<Scored[]> {
  const backend = await OnnxBackend.open(dir, { dtype });
  try {
    const out: Scored[] = [];
    for (const id of ids) {
      const r = await scoreContinuation(backend, items[id]!.context, items[id]!.gold);
      out.push({ id, nats: -r.tokenLogprobs.reduce((a, b) => a + b, 0), tokens: r.tokens.length, bytes: r.bytes });
    }
    return out;
  } finally {
    await backend.close();
  }
}

const bpb = (s: Scored[]) => s.reduce((a, x) => a + x.nats, 0) / (Math.LN2 * s.reduce((a, x) => a + x.bytes, 0));
const rows: string[][] = [];
for (const name of checkpoints) {
  const source = join(MODELS, name);
  const ids = Object.keys(reference[name]!.items)
    .filter((id) => items[id])
    .slice(0, Number(arg('--limit') ?? Infinity));
  const dir = join(mkdtempSync(join(tmpdir(), 'probe-bench-variants-')), name);
  const onnxDir = checkpointShell(source, dir);
  const base = readModel(join(source, 'onnx', 'model.onnx'));
  const half = toFloat16(base);
  writeModel(base, join(onnxDir, 'model.onnx'));
  writeModel(half, join(onnxDir, 'model_fp16.onnx'));
  writeModel(quantizeInt8(base), join(onnxDir, 'model_quantized.onnx'));
  writeModel(quantizeQ4(base), join(onnxDir, 'model_q4.onnx'));
  writeModel(quantizeQ4(half), join(onnxDir, 'model_q4f16.onnx'));
  writeModel(quantizeInt8(base, 'uint8'), join(onnxDir, 'model_uint8.onnx'));
  writeModel(quantizeBnb4(base), join(onnxDir, 'model_bnb4.onnx'));
  const fp32 = await scoreAll(dir, 'fp32', ids);
  const hf = fp32.map((s) => Math.abs(s.nats - reference[name]!.items[s.id]!.nats_nobos));
  rows.push([name, 'fp32 vs HF', String(ids.length), Math.max(...hf).toExponential(2), '', '', bpb(fp32).toFixed(4)]);
  for (const dtype of ['fp16', 'q8', 'uint8', 'q4', 'q4f16', 'bnb4'] as const) {
    const scored = await scoreAll(dir, dtype, ids);
    const deltas = scored.map((s, i) => Math.abs(s.nats - fp32[i]!.nats));
    const perToken = deltas.reduce((a, b) => a + b, 0) / scored.reduce((a, s) => a + s.tokens, 0);
    rows.push([
      name,
      dtype,
      String(ids.length),
      Math.max(...deltas).toFixed(4),
      perToken.toFixed(5),
      Math.abs(bpb(scored) - bpb(fp32)).toFixed(5),
      bpb(scored).toFixed(4),
    ]);
  }
}
process.stdout.write(
  `${formatTable(['checkpoint', 'dtype', 'items', 'max |Δ nats|/item', 'mean |Δ nats|/token', '|Δ bpb|', 'bpb'], rows, [2, 3, 4, 5, 6])}\n`,
);
