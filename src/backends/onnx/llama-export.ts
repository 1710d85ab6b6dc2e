/**
 * Recognises a Llama-architecture ONNX export (torch.onnx / Optimum layout: embedding
 * Gather, per layer RMSNorm → q/k/v → RoPE → attention → o, RMSNorm → SiLU-gated MLP, a
 * final RMSNorm and the LM head) and reads its weights, so that sampling can run them in
 * probe's own decode-step graph (decode-graph.ts).
 *
 * Roles are read from how the graph is wired, not from initializer names (exports name
 * their MatMul weights `onnx::MatMul_857`): k and v are the projections whose outputs
 * reach `present.{l}.key` / `.value` before any other linear layer, q the third on the
 * same input, o the linear layer v's output reaches next, gate the MLP projection whose
 * output feeds a Sigmoid, up its sibling, down the one up reaches, and each RMSNorm weight
 * the 1-D initializer of the Mul that produces a projection's input. Anything else
 * (biases, fused contrib ops, quantised or float16 weights, rope scaling, another
 * activation) is "not recognised", with the reason; the decode graph is then not used,
 * and whatever is recognised is still checked against the checkpoint's own graph
 * (prefix-decoder.ts) before a sample is drawn from it. `llamaModel` hands what is read to
 * the graph builders as the `TransformerModel` a Hugging Face Llama directory gives.
 */
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { readRegularFile } from '../../util/safe-tree.ts';
import type { CheckpointFiles } from '../checkpoint-dir.ts';
import { CHECKPOINT_DIR } from '../checkpoint-limits.ts';
import { halvesToFloats } from './half.ts';
import { weightOfBytes, type TransformerModel } from '../transformer/model.ts';
import { defaultInvFreq } from '../hf/rope.ts';

/** A protobuf message holds less than 2 GiB: a larger graph keeps its weights as external data (which this reader does not run). */
const PROTOBUF_BYTES = 2 * 1024 ** 3 - 1;

const { onnx } = onnxProto;
type NodeProto = OnnxTypes.INodeProto;
type TensorProto = OnnxTypes.ITensorProto;

/** A float32 weight as little-endian bytes (a view into the checkpoint file's bytes). */
export interface Weight {
  dims: number[];
  bytes: Uint8Array;
}

export interface LlamaLayer {
  inputNorm: Weight;
  q: Weight;
  k: Weight;
  v: Weight;
  o: Weight;
  postNorm: Weight;
  gate: Weight;
  up: Weight;
  down: Weight;
}

export interface LlamaShape {
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  eps: number;
  ropeTheta: number;
}

export interface LlamaExport {
  shape: LlamaShape;
  embed: Weight;
  layers: LlamaLayer[];
  finalNorm: Weight;
  head: Weight;
}

/** Why an export is not run by the decode graph (it then samples through its own graph). */
export class NotRecognised extends Error {}

/** The export's weights and shape, or NotRecognised naming what differs from the Llama layout. */
export function readLlamaExport(files: CheckpointFiles): LlamaExport {
  const shape = shapeOf(files.config);
  const model = onnx.ModelProto.decode(readRegularFile(files.modelPath, { maxBytes: PROTOBUF_BYTES, what: CHECKPOINT_DIR }));
  const graph = model.graph;
  if (!graph?.node || !graph.initializer) throw new NotRecognised('the model has no graph');
  const inits = new Map<string, TensorProto>();
  for (const t of graph.initializer) inits.set(t.name!, t);
  const nodes = graph.node;
  const consumers = new Map<string, NodeProto[]>();
  const producer = new Map<string, NodeProto>();
  for (const node of nodes) {
    for (const input of node.input ?? []) {
      const readers = consumers.get(input);
      if (readers) readers.push(node);
      else consumers.set(input, [node]);
    }
    for (const output of node.output ?? []) producer.set(output, node);
  }
  const order = new Map(nodes.map((n, i) => [n, i]));
  const constant = constantsOf(inits, producer);
  const weight = (name: string | undefined, role: string): Weight => {
    const w = name === undefined ? undefined : constant(name, role);
    if (!w) throw new NotRecognised(`${role} is not a constant weight`);
    return w;
  };
  const isConstant = (name: string | undefined) => name !== undefined && constant(name, name) !== undefined;
  const isLinear = (n: NodeProto) => n.opType === 'MatMul' && isConstant(n.input?.[1]);
  for (const n of nodes) {
    if (n.domain && n.domain !== 'ai.onnx') throw new NotRecognised(`operator ${n.domain}.${n.opType} is not a standard one`);
  }
  for (const n of nodes.filter(isLinear)) {
    if ((consumers.get(n.output![0]!) ?? []).some((c) => c.opType === 'Add' && c.input!.some(isConstant)))
      throw new NotRecognised('a projection has a bias');
  }

  const graphOutputs = new Set(graph.output?.map((o) => o.name!) ?? []);
  const reached = new Map<NodeProto, { outputs: Set<string>; linears: Set<NodeProto> }>();
  /**
   * From a linear layer's output, without crossing another linear layer: the graph outputs
   * and the linear layers it reaches. Once per layer: the residual stream makes each walk
   * span the rest of the graph, and the layer search asks again for every layer.
   */
  const reach = (start: NodeProto) => {
    const known = reached.get(start);
    if (known) return known;
    const outputs = new Set<string>();
    const linears = new Set<NodeProto>();
    const seen = new Set<string>();
    const queue = [start.output![0]!];
    while (queue.length > 0) {
      const name = queue.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      if (graphOutputs.has(name)) outputs.add(name);
      for (const next of consumers.get(name) ?? []) {
        if (isLinear(next)) linears.add(next);
        else queue.push(...(next.output ?? []));
      }
    }
    const found = { outputs, linears };
    reached.set(start, found);
    return found;
  };
  /** The 1-D weight of the Mul producing `tensor` (an RMSNorm's last step). */
  const normBefore = (tensor: string, role: string): Weight => {
    const mul = producer.get(tensor);
    const name = mul?.opType === 'Mul' ? mul.input!.find((i) => isConstant(i) && constant(i, i)!.dims.length === 1) : undefined;
    const w = weight(name, `${role} (the RMSNorm weight before it)`);
    if (w.dims[0] !== shape.hidden)
      throw new NotRecognised(`${role}: a norm weight of ${w.dims[0]} values, not hidden_size ${shape.hidden}`);
    return w;
  };
  const single = <T>(items: Iterable<T>, what: string): T => {
    const all = [...items];
    if (all.length !== 1) throw new NotRecognised(`${what}: found ${all.length}`);
    return all[0]!;
  };

  const gather = nodes.find((n) => n.opType === 'Gather' && n.input?.[1] === 'input_ids' && isConstant(n.input[0]));
  const embed = weight(gather?.input?.[0], 'the token embedding (a Gather over input_ids)');
  const headNode = nodes.find((n) => isLinear(n) && n.output?.[0] === 'logits');
  if (!headNode) throw new NotRecognised('logits are not a MatMul by a weight (the LM head)');

  const layers: LlamaLayer[] = [];
  for (let l = 0; ; l++) {
    const kNode = nodes.find((n) => isLinear(n) && reach(n).outputs.has(`present.${l}.key`));
    if (!kNode) break;
    const siblings = (consumers.get(kNode.input![0]!) ?? []).filter(isLinear);
    const vNode = single(
      siblings.filter((n) => reach(n).outputs.has(`present.${l}.value`)),
      `layer ${l}: the value projection`,
    );
    const qNode = single(
      siblings.filter((n) => n !== kNode && n !== vNode),
      `layer ${l}: the query projection beside k and v`,
    );
    const oNode = single(reach(vNode).linears, `layer ${l}: the output projection after attention`);
    // The residual stream carries o's output past every later layer: this layer's gate is the first after o.
    const mlp = [...reach(oNode).linears];
    const gates = mlp.filter((n) => (consumers.get(n.output![0]!) ?? []).some((c) => c.opType === 'Sigmoid'));
    const gateNode = gates.sort((a, b) => order.get(a)! - order.get(b)!)[0];
    if (!gateNode) throw new NotRecognised(`layer ${l}: no gate projection (SiLU) after the output projection`);
    const upNode = single(
      mlp.filter((n) => n !== gateNode && n.input![0] === gateNode.input![0]),
      `layer ${l}: the up projection`,
    );
    const downNode = single(reach(upNode).linears, `layer ${l}: the down projection`);
    const w = (n: NodeProto, role: string) => weight(n.input![1], `layer ${l} ${role}`);
    layers.push({
      inputNorm: normBefore(qNode.input![0]!, `layer ${l} attention input`),
      q: w(qNode, 'q'),
      k: w(kNode, 'k'),
      v: w(vNode, 'v'),
      o: w(oNode, 'o'),
      postNorm: normBefore(gateNode.input![0]!, `layer ${l} MLP input`),
      gate: w(gateNode, 'gate'),
      up: w(upNode, 'up'),
      down: w(downNode, 'down'),
    });
  }
  if (layers.length === 0) throw new NotRecognised('no layer whose key projection reaches present.0.key');
  const linears = nodes.filter(isLinear).length;
  if (linears !== layers.length * 7 + 1)
    throw new NotRecognised(`${linears} weight MatMuls, where ${layers.length} Llama layers and a head have ${layers.length * 7 + 1}`);

  const { hidden, heads, kvHeads, headDim, vocab } = shape;
  const expect = (w: Weight, dims: number[], role: string) => {
    if (w.dims.join() !== dims.join()) throw new NotRecognised(`${role} is [${w.dims}], not [${dims}]`);
  };
  expect(embed, [vocab, hidden], 'the token embedding');
  layers.forEach((layer, l) => {
    expect(layer.q, [hidden, heads * headDim], `layer ${l} q`);
    expect(layer.k, [hidden, kvHeads * headDim], `layer ${l} k`);
    expect(layer.v, [hidden, kvHeads * headDim], `layer ${l} v`);
    expect(layer.o, [heads * headDim, hidden], `layer ${l} o`);
    expect(layer.down, [layer.gate.dims[1]!, hidden], `layer ${l} down`);
  });
  const head = weight(headNode.input![1], 'the LM head');
  expect(head, [hidden, vocab], 'the LM head');
  return { shape, embed, layers, finalNorm: normBefore(headNode.input![0]!, 'the LM head'), head };
}

/**
 * The constant a tensor name holds: an initializer, or one widened from float16 by a Cast
 * or transposed by a Transpose (how the repo's own imports store weights: float16, and the
 * tied LM head as the embedding transposed; onnxruntime folds both at load). Each is
 * read once; undefined for anything computed from inputs.
 */
function constantsOf(inits: Map<string, TensorProto>, producer: Map<string, NodeProto>) {
  const known = new Map<string, Weight | undefined>();
  const resolve = (name: string, role: string): Weight | undefined => {
    if (known.has(name)) return known.get(name);
    let found: Weight | undefined;
    const init = inits.get(name);
    const node = producer.get(name);
    if (init) found = initializerWeight(init, role);
    else if (node?.opType === 'Cast' && Number(node.attribute?.find((a) => a.name === 'to')?.i) === onnx.TensorProto.DataType.FLOAT) {
      const source = inits.get(node.input![0]!);
      if (source?.dataType === onnx.TensorProto.DataType.FLOAT16) found = widened(source, role);
      else if (source) found = initializerWeight(source, role);
    } else if (node?.opType === 'Transpose') {
      const from = resolve(node.input![0]!, role);
      const perm = node.attribute?.find((a) => a.name === 'perm')?.ints?.map(Number) ?? [1, 0];
      if (from && from.dims.length === 2 && perm.join() === '1,0') found = transposed(from);
    }
    known.set(name, found);
    return found;
  };
  return resolve;
}

function initializerWeight(t: TensorProto, role: string): Weight | undefined {
  if (t.dataType !== onnx.TensorProto.DataType.FLOAT) return undefined;
  if (t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) throw new NotRecognised(`${role} is stored as external data`);
  const dims = (t.dims ?? []).map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const bytes = t.rawData?.length ? t.rawData : new Uint8Array(Float32Array.from(t.floatData ?? []).buffer);
  if (bytes.byteLength !== count * 4) throw new NotRecognised(`${role}: ${bytes.byteLength} bytes for [${dims}]`);
  return { dims, bytes };
}

function widened(t: TensorProto, role: string): Weight {
  if (t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) throw new NotRecognised(`${role} is stored as external data`);
  const dims = (t.dims ?? []).map(Number);
  const raw = t.rawData;
  if (!raw || raw.byteLength !== dims.reduce((a, b) => a * b, 1) * 2) throw new NotRecognised(`${role}: float16 data not as raw bytes`);
  const halves = new Uint16Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  const floats = halvesToFloats(halves);
  return { dims, bytes: new Uint8Array(floats.buffer) };
}

function transposed(w: Weight): Weight {
  const [rows, cols] = w.dims as [number, number];
  const from = new Float32Array(w.bytes.buffer.slice(w.bytes.byteOffset, w.bytes.byteOffset + w.bytes.byteLength));
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = from[r * cols + c]!;
  return { dims: [cols, rows], bytes: new Uint8Array(out.buffer) };
}

interface LlamaConfigFields {
  hidden_size?: number;
  num_attention_heads?: number;
  num_key_value_heads?: number;
  head_dim?: number;
  vocab_size?: number;
  rms_norm_eps?: number;
  rope_theta?: number;
  rope_parameters?: { rope_theta?: number; rope_type?: string } | null;
  rope_scaling?: { rope_type?: string; type?: string } | null;
  hidden_act?: string;
  attention_bias?: boolean;
  mlp_bias?: boolean;
  model_type?: string;
}

function shapeOf(config: CheckpointFiles['config']): LlamaShape {
  const c = config as LlamaConfigFields;
  if (c.model_type !== 'llama') throw new NotRecognised(`model_type is ${JSON.stringify(c.model_type)}, not "llama"`);
  if ((c.hidden_act ?? 'silu') !== 'silu') throw new NotRecognised(`hidden_act is ${c.hidden_act}, not silu`);
  if (c.attention_bias || c.mlp_bias) throw new NotRecognised('the config declares biases');
  const ropeType = c.rope_parameters?.rope_type ?? c.rope_scaling?.rope_type ?? c.rope_scaling?.type ?? 'default';
  if (ropeType !== 'default') throw new NotRecognised(`rope type ${ropeType} (only the default RoPE is built)`);
  const hidden = c.hidden_size;
  const heads = c.num_attention_heads;
  if (!hidden || !heads || !c.vocab_size) throw new NotRecognised('config.json lacks hidden_size, num_attention_heads or vocab_size');
  const kvHeads = c.num_key_value_heads ?? heads;
  const headDim = c.head_dim ?? hidden / heads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0 || heads % kvHeads !== 0)
    throw new NotRecognised(`heads ${heads}, kv heads ${kvHeads}, head_dim ${headDim} do not divide as Llama's`);
  return {
    hidden,
    heads,
    kvHeads,
    headDim,
    vocab: c.vocab_size,
    eps: c.rms_norm_eps ?? 1e-6,
    ropeTheta: c.rope_parameters?.rope_theta ?? c.rope_theta ?? 10000,
  };
}

/** The export as the graph builders read a model (transformer/model.ts): Llama's arithmetic, the export's weights. */
export function llamaModel(model: LlamaExport): TransformerModel {
  const { shape } = model;
  const invFreq = defaultInvFreq(shape.ropeTheta, shape.headDim);
  const weight = (w: Weight) => weightOfBytes(w.dims, w.bytes);
  const linear = (w: Weight) => ({ weight: weight(w) });
  return {
    spec: {
      family: 'Llama',
      hidden: shape.hidden,
      heads: shape.heads,
      kvHeads: shape.kvHeads,
      headDim: shape.headDim,
      vocab: shape.vocab,
      layers: model.layers.length,
      norm: { kind: 'rms', eps: shape.eps },
      block: 'pre',
      qkNorm: 'none',
      rotary: { dims: shape.headDim, invFreq, attentionFactor: 1 },
      attention: { scale: 1 / Math.sqrt(shape.headDim), windows: model.layers.map(() => undefined) },
      mlp: { activation: 'silu' },
    },
    weights: {
      embed: weight(model.embed),
      layers: model.layers.map((layer) => ({
        norms: [{ weight: weight(layer.inputNorm) }, { weight: weight(layer.postNorm) }],
        qkv: { kind: 'separate', q: linear(layer.q), k: linear(layer.k), v: linear(layer.v) },
        o: linear(layer.o),
        mlp: { kind: 'gated', gate: linear(layer.gate), up: linear(layer.up) },
        down: linear(layer.down),
      })),
      finalNorm: { weight: weight(model.finalNorm) },
      head: weight(model.head),
    },
  };
}
