/**
 * The layouts real exports come in, made from one real export the way the real tools make
 * them, for tests that must run without Python or a network:
 *
 * - `toFloat16`: onnx-community's `model_fp16.onnx` (onnxconverter-common's
 *   convert_float_to_float16 with keep_io_types=False): float initializers and constants
 *   become float16 (clamped to ±1e4, as the converter does), Cast(to=FLOAT) casts to
 *   FLOAT16, the cache and logits are float16. onnxruntime's CPU provider casts around ops
 *   it has no float16 kernel for.
 * - `quantizeInt8`: onnxruntime.quantization.quantize_dynamic's `model_quantized.onnx`:
 *   each MatMul over a weight becomes DynamicQuantizeLinear(A) → MatMulInteger(A_q, W_q,
 *   A_zp, W_zp) → Cast → Mul(A_scale · W_scale), weights int8 symmetric per tensor (or
 *   uint8 asymmetric: `model_uint8.onnx`).
 * - `quantizeQ4`: MatMul4BitsQuantizer's `model_q4.onnx`: com.microsoft MatMulNBits (4 bits,
 *   blocks of 32 along K, asymmetric with packed zero points).
 * - `quantizeBnb4`: MatMulBnb4Quantizer's `model_bnb4.onnx` (NF4, blocks of 64).
 * - `withoutPositionIds`: Optimum's exports that compute positions from the mask
 *   (cumsum − 1, the last `seq` of them) instead of taking `position_ids`.
 * - `withLogitsToKeep`: a `num_logits_to_keep` int64 scalar that slices the hidden states
 *   before the LM head (HF: 0 keeps every position).
 * - `writeModel` with `external`: weights in `<file>_data` (onnx's save_as_external_data).
 *
 * Nothing here is used at run time; `probe` itself never rewrites a user's graph.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { fromHalfBits, toHalfBits } from './onnx-graph.ts';
import { encodeModel, floatsOf, type ModelProto, readModel, type TensorProto } from './real-graph.ts';

const { onnx } = onnxProto;
const T = onnx.TensorProto.DataType;
type NodeProto = OnnxTypes.INodeProto;
type AttributeProto = OnnxTypes.IAttributeProto;

const INT64_MAX = 2n ** 63n - 1n;
const MS_DOMAIN = 'com.microsoft';

function clone(model: ModelProto): ModelProto {
  return onnx.ModelProto.decode(encodeModel(model));
}

function graphOf(model: ModelProto): OnnxTypes.GraphProto {
  return model.graph as OnnxTypes.GraphProto;
}

function rawTensor(name: string, dataType: number, dims: number[], bytes: ArrayBufferView): TensorProto {
  return onnx.TensorProto.create({ name, dataType, dims, rawData: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) });
}

function int64Tensor(name: string, dims: number[], values: bigint[]): TensorProto {
  return rawTensor(name, T.INT64, dims, BigInt64Array.from(values));
}

function node(opType: string, inputs: string[], outputs: string[], attrs: AttributeProto[] = [], domain = ''): NodeProto {
  return onnx.NodeProto.create({ opType, name: `/variant/${outputs[0]}`, input: inputs, output: outputs, attribute: attrs, domain });
}

function intAttr(name: string, i: number): AttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INT, i };
}

/** onnxconverter-common's clamp: magnitudes above 1e4 become 1e4, nonzero ones below 1e-7 become 1e-7. */
function halfBitsClamped(values: Float32Array): Uint16Array {
  const clamped = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    const mag = Math.abs(v);
    clamped[i] = mag > 1e4 ? Math.sign(v) * 1e4 : mag > 0 && mag < 1e-7 ? Math.sign(v) * 1e-7 : v;
  }
  return toHalfBits(clamped);
}

function tensorToHalf(tensor: TensorProto): void {
  if (tensor.dataType !== T.FLOAT) return;
  const bits = halfBitsClamped(floatsOf(tensor));
  tensor.dataType = T.FLOAT16;
  tensor.floatData = [];
  tensor.rawData = Buffer.from(bits.buffer, bits.byteOffset, bits.byteLength);
}

/** model_fp16.onnx: every float in the graph (weights, constants, casts, inputs and outputs) becomes float16. */
export function toFloat16(source: ModelProto): ModelProto {
  const model = clone(source);
  const graph = graphOf(model);
  for (const tensor of graph.initializer) tensorToHalf(tensor);
  for (const n of graph.node) {
    for (const attr of n.attribute ?? []) {
      if (n.opType === 'Constant' && attr.t) tensorToHalf(attr.t as TensorProto);
      if (n.opType === 'Cast' && attr.name === 'to' && Number(attr.i) === T.FLOAT) attr.i = T.FLOAT16;
    }
  }
  for (const value of [...graph.input, ...graph.output]) {
    const type = value.type?.tensorType;
    if (type && type.elemType === T.FLOAT) type.elemType = T.FLOAT16;
  }
  // Shapes and types recorded at export time name float32; onnxruntime infers them again.
  graph.valueInfo = [];
  return model;
}

/** A float32 or float16 initializer's values as float32. */
function valuesOf(tensor: TensorProto): Float32Array {
  if (tensor.dataType !== T.FLOAT16) return floatsOf(tensor);
  const raw = tensor.rawData!;
  const bits = new Uint16Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  return Float32Array.from(bits, fromHalfBits);
}

/** The MatMuls whose B is a 2-D float (or float16) initializer (the linear layers and the LM head), with that weight. */
function weightMatMuls(graph: OnnxTypes.GraphProto, types: number[] = [T.FLOAT]): Array<{ node: NodeProto; weight: TensorProto }> {
  const weights = new Map(graph.initializer.map((t) => [t.name!, t]));
  return graph.node.flatMap((n) => {
    const weight = n.opType === 'MatMul' ? weights.get(n.input![1]!) : undefined;
    return weight && types.includes(weight.dataType!) && weight.dims!.length === 2 ? [{ node: n, weight }] : [];
  });
}

/** Replaces `old` nodes by their rewrites in place (order kept, so the graph stays topologically sorted) and drops unused float weights. */
function rewrite(graph: OnnxTypes.GraphProto, replacements: Map<NodeProto, NodeProto[]>, added: TensorProto[]): void {
  graph.node = graph.node.flatMap((n) => replacements.get(n) ?? [n]);
  const used = new Set(graph.node.flatMap((n) => n.input ?? []));
  graph.initializer = [...graph.initializer.filter((t) => used.has(t.name!)), ...added];
  graph.valueInfo = [];
}

/**
 * Weights as quantize_dynamic stores them, per tensor: int8 symmetric (zero point 0, scale
 * max|w|/127), or uint8 asymmetric over [min(w, 0), max(w, 0)].
 */
function quantizeWeights(values: Float32Array, type: 'int8' | 'uint8'): { q: Int8Array | Uint8Array; scale: number; zeroPoint: number } {
  let lo = 0;
  let hi = 0;
  for (const v of values) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  if (type === 'int8') {
    const scale = Math.max(-lo, hi) / 127 || 1;
    return { q: Int8Array.from(values, (v) => Math.max(-127, Math.min(127, Math.round(v / scale)))), scale, zeroPoint: 0 };
  }
  const scale = (hi - lo) / 255 || 1;
  const zeroPoint = Math.max(0, Math.min(255, Math.round(-lo / scale)));
  return { q: Uint8Array.from(values, (v) => Math.max(0, Math.min(255, Math.round(v / scale) + zeroPoint))), scale, zeroPoint };
}

/**
 * model_quantized.onnx / model_int8.onnx (quantize_dynamic, QInt8 weights) or
 * model_uint8.onnx (QUInt8): integer matmuls over dynamically quantized activations.
 */
export function quantizeInt8(source: ModelProto, weightType: 'int8' | 'uint8' = 'int8'): ModelProto {
  const model = clone(source);
  const graph = graphOf(model);
  const replacements = new Map<NodeProto, NodeProto[]>();
  const added: TensorProto[] = [];
  // One DynamicQuantizeLinear per activation, shared by the matmuls that read it (q, k and v), as the quantizer does.
  const quantized = new Map<string, string>();
  for (const { node: mm, weight } of weightMatMuls(graph)) {
    const a = mm.input![0]!;
    const w = weight.name!;
    const nodes: NodeProto[] = [];
    if (!quantized.has(a)) {
      quantized.set(a, a);
      nodes.push(node('DynamicQuantizeLinear', [a], [`${a}_quantized`, `${a}_scale`, `${a}_zero_point`]));
    }
    const { q, scale, zeroPoint } = quantizeWeights(floatsOf(weight), weightType);
    const type = weightType === 'int8' ? T.INT8 : T.UINT8;
    added.push(rawTensor(`${w}_quantized`, type, weight.dims!.map(Number), q));
    added.push(rawTensor(`${w}_scale`, T.FLOAT, [], Float32Array.of(scale)));
    added.push(rawTensor(`${w}_zero_point`, type, [], weightType === 'int8' ? Int8Array.of(zeroPoint) : Uint8Array.of(zeroPoint)));
    const out = mm.output![0]!;
    nodes.push(
      node('MatMulInteger', [`${a}_quantized`, `${w}_quantized`, `${a}_zero_point`, `${w}_zero_point`], [`${out}_quantized`]),
      node('Cast', [`${out}_quantized`], [`${out}_quantized_cast`], [intAttr('to', T.FLOAT)]),
      node('Mul', [`${a}_scale`, `${w}_scale`], [`${out}_quantized_scale`]),
      node('Mul', [`${out}_quantized_cast`, `${out}_quantized_scale`], [out]),
    );
    replacements.set(mm, nodes);
  }
  rewrite(graph, replacements, added);
  return model;
}

export const Q4_BLOCK = 32;

/**
 * W [K, N] in MatMulNBits' layout: B [N, K/32, 16] (column n's block b; element 2j in the
 * low nibble of byte j, 2j + 1 in the high one), scales [N · K/32], zero points packed two
 * blocks a byte (column n's block b in byte n · ⌈blocks/2⌉ + ⌊b/2⌋, low nibble for even b).
 * Each block is quantized asymmetrically over [min(v, 0), max(v, 0)], as MLAS does.
 */
export function packQ4(values: Float32Array, k: number, n: number): { b: Uint8Array; scales: Float32Array; zeroPoints: Uint8Array } {
  if (k % Q4_BLOCK) throw new Error(`K = ${k} is not a multiple of ${Q4_BLOCK}`);
  const blocks = k / Q4_BLOCK;
  const zpBytes = Math.ceil(blocks / 2);
  const b = new Uint8Array(n * blocks * (Q4_BLOCK / 2));
  const scales = new Float32Array(n * blocks);
  const zeroPoints = new Uint8Array(n * zpBytes);
  for (let col = 0; col < n; col++) {
    for (let blk = 0; blk < blocks; blk++) {
      let lo = 0;
      let hi = 0;
      for (let j = 0; j < Q4_BLOCK; j++) {
        const v = values[(blk * Q4_BLOCK + j) * n + col]!;
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
      const scale = hi > lo ? (hi - lo) / 15 : 1;
      const zp = Math.max(0, Math.min(15, Math.round(-lo / scale)));
      scales[col * blocks + blk] = scale;
      zeroPoints[col * zpBytes + (blk >> 1)]! |= zp << ((blk & 1) * 4);
      for (let j = 0; j < Q4_BLOCK; j++) {
        const v = values[(blk * Q4_BLOCK + j) * n + col]!;
        const q = Math.max(0, Math.min(15, Math.round(v / scale) + zp));
        b[(col * blocks + blk) * (Q4_BLOCK / 2) + (j >> 1)]! |= q << ((j & 1) * 4);
      }
    }
  }
  return { b, scales, zeroPoints };
}

/**
 * model_q4.onnx (MatMul4BitsQuantizer, block 32, asymmetric): every weight MatMul becomes
 * MatMulNBits. Run on a toFloat16 model it gives model_q4f16.onnx (float16 activations and
 * scales), as onnx-community makes it.
 */
export function quantizeQ4(source: ModelProto): ModelProto {
  const model = clone(source);
  const graph = graphOf(model);
  const replacements = new Map<NodeProto, NodeProto[]>();
  const added: TensorProto[] = [];
  for (const { node: mm, weight } of weightMatMuls(graph, [T.FLOAT, T.FLOAT16])) {
    const [k, n] = weight.dims!.map(Number) as [number, number];
    const { b, scales, zeroPoints } = packQ4(valuesOf(weight), k, n);
    const w = weight.name!;
    added.push(rawTensor(`${w}_Q4`, T.UINT8, [n, k / Q4_BLOCK, Q4_BLOCK / 2], b));
    added.push(
      weight.dataType === T.FLOAT16
        ? rawTensor(`${w}_scales`, T.FLOAT16, [n * (k / Q4_BLOCK)], toHalfBits(scales))
        : rawTensor(`${w}_scales`, T.FLOAT, [n * (k / Q4_BLOCK)], scales),
    );
    added.push(rawTensor(`${w}_zero_points`, T.UINT8, [zeroPoints.length], zeroPoints));
    replacements.set(mm, [
      node(
        'MatMulNBits',
        [mm.input![0]!, `${w}_Q4`, `${w}_scales`, `${w}_zero_points`],
        [mm.output![0]!],
        [intAttr('K', k), intAttr('N', n), intAttr('bits', 4), intAttr('block_size', Q4_BLOCK)],
        MS_DOMAIN,
      ),
    ]);
  }
  rewrite(graph, replacements, added);
  if (!model.opsetImport.some((o) => o.domain === MS_DOMAIN)) model.opsetImport.push({ domain: MS_DOMAIN, version: 1 });
  return model;
}

export const BNB4_BLOCK = 64;

/** bitsandbytes' NF4 code book (quant_type 1): 16 quantiles of N(0, 1), scaled to [-1, 1]. */
const NF4 = [
  -1, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0,
  0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
  0.7229568362236023, 1,
];

/**
 * W [K, N] in MatMulBnb4's layout: Wᵀ [N, K] flattened, in blocks of 64 with one absmax
 * each, every value the nearest NF4 code of v / absmax, two a byte with the first in the
 * high nibble (bitsandbytes' order, which onnxruntime's DequantizeBlockBnb4 reads).
 */
export function packBnb4(values: Float32Array, k: number, n: number): { b: Uint8Array; absmax: Float32Array } {
  const numel = k * n;
  const flat = new Float32Array(numel);
  for (let col = 0; col < n; col++) for (let row = 0; row < k; row++) flat[col * k + row] = values[row * n + col]!;
  const absmax = new Float32Array(Math.ceil(numel / BNB4_BLOCK));
  const b = new Uint8Array(Math.ceil(numel / 2));
  for (let blk = 0; blk < absmax.length; blk++) {
    let max = 0;
    for (let i = blk * BNB4_BLOCK; i < Math.min(numel, (blk + 1) * BNB4_BLOCK); i++) max = Math.max(max, Math.abs(flat[i]!));
    absmax[blk] = max;
    for (let i = blk * BNB4_BLOCK; i < Math.min(numel, (blk + 1) * BNB4_BLOCK); i++) {
      const x = max > 0 ? flat[i]! / max : 0;
      let code = 0;
      for (let c = 1; c < 16; c++) if (Math.abs(NF4[c]! - x) < Math.abs(NF4[code]! - x)) code = c;
      b[i >> 1]! |= code << (i & 1 ? 0 : 4);
    }
  }
  return { b, absmax };
}

/** W [K, N] as MatMulBnb4 reads packBnb4's output back. */
export function unpackBnb4(packed: ReturnType<typeof packBnb4>, k: number, n: number): Float32Array {
  const out = new Float32Array(k * n);
  for (let col = 0; col < n; col++) {
    for (let row = 0; row < k; row++) {
      const i = col * k + row;
      const code = (packed.b[i >> 1]! >> (i & 1 ? 0 : 4)) & 15;
      out[row * n + col] = NF4[code]! * packed.absmax[Math.floor(i / BNB4_BLOCK)]!;
    }
  }
  return out;
}

/** model_bnb4.onnx (MatMulBnb4Quantizer, NF4, block 64): every weight MatMul becomes com.microsoft MatMulBnb4. */
export function quantizeBnb4(source: ModelProto): ModelProto {
  const model = clone(source);
  const graph = graphOf(model);
  const replacements = new Map<NodeProto, NodeProto[]>();
  const added: TensorProto[] = [];
  for (const { node: mm, weight } of weightMatMuls(graph)) {
    const [k, n] = weight.dims!.map(Number) as [number, number];
    const { b, absmax } = packBnb4(floatsOf(weight), k, n);
    const w = weight.name!;
    added.push(rawTensor(`${w}_Bnb4`, T.UINT8, [b.length], b), rawTensor(`${w}_absmax`, T.FLOAT, [absmax.length], absmax));
    replacements.set(mm, [
      node(
        'MatMulBnb4',
        [mm.input![0]!, `${w}_Bnb4`, `${w}_absmax`],
        [mm.output![0]!],
        [intAttr('K', k), intAttr('N', n), intAttr('block_size', BNB4_BLOCK), intAttr('quant_type', 1)],
        MS_DOMAIN,
      ),
    ]);
  }
  rewrite(graph, replacements, added);
  if (!model.opsetImport.some((o) => o.domain === MS_DOMAIN)) model.opsetImport.push({ domain: MS_DOMAIN, version: 1 });
  return model;
}

/** Positions computed in-graph from attention_mask (cumsum − 1, the last `seq`), as Optimum exports do; no position_ids input. */
export function withoutPositionIds(source: ModelProto): ModelProto {
  const model = clone(source);
  const graph = graphOf(model);
  graph.input = graph.input.filter((i) => i.name !== 'position_ids');
  graph.initializer.push(
    int64Tensor('/variant/axis1', [], [1n]),
    int64Tensor('/variant/one', [], [1n]),
    int64Tensor('/variant/axes1', [1], [1n]),
    int64Tensor('/variant/shape1', [1], [1n]),
    int64Tensor('/variant/end', [1], [INT64_MAX]),
  );
  const computed = [
    node('CumSum', ['attention_mask', '/variant/axis1'], ['/variant/mask_cumsum']),
    node('Sub', ['/variant/mask_cumsum', '/variant/one'], ['/variant/positions_all']),
    node('Shape', ['input_ids'], ['/variant/ids_shape']),
    node('Gather', ['/variant/ids_shape', '/variant/axis1'], ['/variant/seq'], [intAttr('axis', 0)]),
    node('Neg', ['/variant/seq'], ['/variant/neg_seq']),
    node('Reshape', ['/variant/neg_seq', '/variant/shape1'], ['/variant/positions_start']),
    node('Slice', ['/variant/positions_all', '/variant/positions_start', '/variant/end', '/variant/axes1'], ['position_ids']),
  ];
  graph.node = [...computed, ...graph.node];
  return model;
}

/** A `name` int64 scalar input keeping the last N positions' hidden states before the LM head (0 keeps all: `-0:` is the whole range). */
export function withLogitsToKeep(source: ModelProto, name = 'num_logits_to_keep'): ModelProto {
  const model = clone(source);
  const graph = graphOf(model);
  const head = graph.node.findIndex((n) => n.output!.includes('logits'));
  if (head < 0) throw new Error('no node produces logits');
  const hidden = graph.node[head]!.input![0]!;
  graph.input.push({ name, type: { tensorType: { elemType: T.INT64, shape: { dim: [] } } } });
  graph.initializer.push(
    int64Tensor('/variant/keep_shape', [1], [1n]),
    int64Tensor('/variant/keep_end', [1], [INT64_MAX]),
    int64Tensor('/variant/keep_axes', [1], [1n]),
  );
  const slice = [
    node('Neg', [name], ['/variant/neg_keep']),
    node('Reshape', ['/variant/neg_keep', '/variant/keep_shape'], ['/variant/keep_start']),
    node('Slice', [hidden, '/variant/keep_start', '/variant/keep_end', '/variant/keep_axes'], ['/variant/hidden_kept']),
  ];
  graph.node[head]!.input![0] = '/variant/hidden_kept';
  graph.node.splice(head, 0, ...slice);
  const dims = graph.output.find((o) => o.name === 'logits')?.type?.tensorType?.shape?.dim;
  if (dims && dims.length === 3) dims[1] = { dimParam: 'kept' };
  return model;
}

/**
 * Writes `model` to `path`; with `external`, every initializer of 1 KiB or more goes to
 * `<file>_data` beside it (location/offset/length entries), as onnx's
 * save_as_external_data does for `model.onnx` + `model.onnx_data`.
 */
export function writeModel(model: ModelProto, path: string, options: { external?: boolean } = {}): void {
  if (!options.external) {
    writeFileSync(path, encodeModel(model));
    return;
  }
  const copy = clone(model);
  const dataFile = `${basename(path)}_data`;
  const chunks: Buffer[] = [];
  let offset = 0;
  for (const tensor of graphOf(copy).initializer) {
    const raw = tensor.rawData;
    if (!raw || raw.length < 1024) continue;
    chunks.push(Buffer.from(raw));
    tensor.externalData = [
      { key: 'location', value: dataFile },
      { key: 'offset', value: String(offset) },
      { key: 'length', value: String(raw.length) },
    ];
    tensor.dataLocation = onnx.TensorProto.DataLocation.EXTERNAL;
    tensor.rawData = new Uint8Array(0);
    offset += raw.length;
  }
  writeFileSync(join(path, '..', dataFile), Buffer.concat(chunks));
  writeFileSync(path, encodeModel(copy));
}

/** A checkpoint directory: `source`'s config and tokenizer files, and no graph yet (add them with writeModel into `<dir>/onnx/`). */
export function checkpointShell(source: string, dir: string): string {
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(source, file), join(dir, file));
  return join(dir, 'onnx');
}

export { readModel };

/**
 * The float32 graph with every weight replaced by its 4-bit round trip (packQ4 → unpackQ4,
 * or packBnb4 → unpackBnb4): what model_q4.onnx (model_bnb4.onnx) computes if onnxruntime
 * reads the packing as it is written, so the two agreeing checks the layout independently
 * of how much 4 bits cost.
 */
export function dequantized(source: ModelProto, kind: 'q4' | 'bnb4'): ModelProto {
  const model = clone(source);
  for (const { weight } of weightMatMuls(graphOf(model))) {
    const [k, n] = weight.dims!.map(Number) as [number, number];
    const w = floatsOf(weight);
    const values = kind === 'q4' ? unpackQ4(packQ4(w, k, n), k, n) : unpackBnb4(packBnb4(w, k, n), k, n);
    weight.floatData = [];
    weight.rawData = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  }
  return model;
}

/** W [K, N] as MatMulNBits reads packQ4's output back: (q − zero point) · scale. */
export function unpackQ4(packed: ReturnType<typeof packQ4>, k: number, n: number): Float32Array {
  const blocks = k / Q4_BLOCK;
  const zpBytes = Math.ceil(blocks / 2);
  const out = new Float32Array(k * n);
  for (let col = 0; col < n; col++) {
    for (let row = 0; row < k; row++) {
      const blk = Math.floor(row / Q4_BLOCK);
      const j = row % Q4_BLOCK;
      const q = (packed.b[(col * blocks + blk) * (Q4_BLOCK / 2) + (j >> 1)]! >> ((j & 1) * 4)) & 15;
      const zp = (packed.zeroPoints[col * zpBytes + (blk >> 1)]! >> ((blk & 1) * 4)) & 15;
      out[row * n + col] = (q - zp) * packed.scales[col * blocks + blk]!;
    }
  }
  return out;
}
