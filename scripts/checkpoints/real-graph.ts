/**
 * Reading and reshaping real ONNX exports (torch.onnx / Optimum layout), for tests and
 * benches that need a real-layout graph the repo cannot train: the same architecture
 * and operators as `../shared/models/`, with a different vocabulary.
 *
 * Nothing here is used at run time; `probe` itself never rewrites a user's graph.
 */
import { readFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { createRng } from '../../src/util/rng.ts';

const { onnx } = onnxProto;
export type ModelProto = OnnxTypes.ModelProto;
export type TensorProto = OnnxTypes.ITensorProto;

export function readModel(path: string): ModelProto {
  return onnx.ModelProto.decode(readFileSync(path));
}

export function encodeModel(model: ModelProto): Uint8Array {
  return onnx.ModelProto.encode(model).finish();
}

/** The float32 initializer `name` as numbers (raw_data or float_data). */
export function floatsOf(tensor: TensorProto): Float32Array {
  if (tensor.rawData?.length) {
    const raw = tensor.rawData;
    return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  }
  return Float32Array.from(tensor.floatData ?? []);
}

function initializer(model: ModelProto, name: string): TensorProto {
  const found = model.graph!.initializer!.find((t) => t.name === name);
  if (!found) throw new Error(`no initializer ${name}`);
  return found;
}

/** The token embedding ([vocab, hidden], read by the Gather over input_ids) and the LM head ([hidden, vocab], the MatMul producing logits). */
export function vocabTensors(model: ModelProto): { embed: TensorProto; head: TensorProto | undefined } {
  const nodes = model.graph!.node!;
  const gather = nodes.find((n) => n.opType === 'Gather' && n.input?.[1] === 'input_ids');
  if (!gather) throw new Error('no Gather over input_ids (not a causal-LM export)');
  const matmul = nodes.find((n) => n.opType === 'MatMul' && n.output?.[0] === 'logits');
  const headName = matmul?.input?.[1];
  const head = headName ? model.graph!.initializer!.find((t) => t.name === headName) : undefined;
  return { embed: initializer(model, gather.input![0]!), head };
}

/**
 * The same graph over a vocabulary of `vocab` tokens: the embedding and LM head get
 * `vocab` rows (the first rows of the trained ones where they exist, the rest drawn
 * deterministically on the trained rows' scale), and the declared logits width follows.
 * Layers, attention, cache and operators are untouched, so its cost per token is what a
 * real model of that vocabulary pays.
 */
export function resizeVocab(model: ModelProto, vocab: number, seed = 1): ModelProto {
  const out = onnx.ModelProto.decode(onnx.ModelProto.encode(model).finish());
  const { embed, head } = vocabTensors(out);
  const [oldVocab, hidden] = embed.dims!.map(Number) as [number, number];
  const old = floatsOf(embed);
  let scale = 0;
  for (const v of old) scale += v * v;
  scale = Math.sqrt(scale / old.length);
  const rng = createRng('resize-vocab', seed, vocab);
  const rows = new Float32Array(vocab * hidden);
  rows.set(old.subarray(0, Math.min(oldVocab, vocab) * hidden));
  for (let i = Math.min(oldVocab, vocab) * hidden; i < rows.length; i++) rows[i] = (rng.next() * 2 - 1) * scale * Math.sqrt(3);
  setFloats(embed, [vocab, hidden], rows);
  if (head) {
    // The head is the embedding transposed (tied weights), as the export stores it.
    const transposed = new Float32Array(hidden * vocab);
    for (let v = 0; v < vocab; v++) for (let h = 0; h < hidden; h++) transposed[h * vocab + v] = rows[v * hidden + h]!;
    setFloats(head, [hidden, vocab], transposed);
  }
  const logits = out.graph!.output!.find((o) => o.name === 'logits');
  const dims = logits?.type?.tensorType?.shape?.dim;
  if (dims && dims.length === 3 && dims[2]!.dimValue) dims[2] = onnx.TensorShapeProto.Dimension.create({ dimValue: vocab });
  // Shapes inferred at export time name the old width; onnxruntime infers them again.
  out.graph!.valueInfo = (out.graph!.valueInfo ?? []).filter(
    (v) => !v.type?.tensorType?.shape?.dim?.some((d) => Number(d.dimValue) === oldVocab),
  );
  return out;
}

function setFloats(tensor: TensorProto, dims: number[], values: Float32Array): void {
  tensor.dims = dims;
  tensor.floatData = [];
  tensor.rawData = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}
