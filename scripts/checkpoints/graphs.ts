/**
 * The two graph families of the embedded ladder.
 *
 * - `ngramGraph`: a class-trigram lookup with no key/value cache (inputs `input_ids`,
 *   `attention_mask`; output `logits`). It exercises the path for graphs without past
 *   inputs, where every step re-reads the whole sequence.
 * - `attentionGraph`: a decoder named as Hugging Face Optimum exports Llama/Qwen2
 *   (`input_ids`, `attention_mask`, `position_ids`, `past_key_values.{i}.key/value` →
 *   `logits`, `present.{i}.key/value`): multi-head causal attention over a KV cache,
 *   whose logits are a counted bigram plus a small attention term.
 */
import { createRng } from '../../src/util/rng.ts';
import { CLASS_COUNT, tokenClass } from './ngram.ts';
import { DType, GraphBuilder, toHalfBits } from './onnx-graph.ts';

export function ngramGraph(opts: { vocab: number; eosId: number; table: Float64Array; doc: string; copy?: CopyTables }): Uint8Array {
  const { vocab, eosId, table } = opts;
  const g = new GraphBuilder();
  const ids = g.input('input_ids', DType.int64, ['batch_size', 'sequence_length']);
  g.input('attention_mask', DType.int64, ['batch_size', 'sequence_length']);
  // The token before position t; position 0 gets the "no previous token" id (= vocab).
  const classes = Array.from({ length: vocab + 1 }, (_, id) => tokenClass(id, eosId));
  g.ints('token_class', [vocab + 1], classes);
  g.ints('none_id', [1, 1], [vocab]);
  g.ints('zero', [1], [0]);
  g.ints('one', [1], [1]);
  g.ints('minus_one', [1], [-1]);
  g.ints('class_count', [], [CLASS_COUNT]);
  g.halves('ngram_logprobs', [vocab * CLASS_COUNT, vocab], toHalfBits(table));
  const shape = g.op1('Shape', [ids]);
  const batch = g.op1('Slice', [shape, 'zero', 'one', 'zero']);
  const firstShape = g.op1('Concat', [batch, 'one'], { axis: 0 });
  const first = g.op1('Expand', ['none_id', firstShape]);
  const shifted = g.op1('Slice', [ids, 'zero', 'minus_one', 'one']);
  const prev = g.op1('Concat', [first, shifted], { axis: 1 });
  const prevClass = g.op1('Gather', ['token_class', prev], { axis: 0 });
  const row = g.op1('Add', [g.op1('Mul', [ids, 'class_count']), prevClass]);
  const half = g.op1('Gather', ['ngram_logprobs', row], { axis: 0 });
  if (opts.copy) {
    g.ints('copy_axis_last', [1], [-1]);
    g.op1('Identity', [addCopyTerm(g, ids, g.op1('Cast', [half], { to: DType.float }), vocab, eosId, opts.copy)], {}, 'logits');
  } else {
    g.op1('Cast', [half], { to: DType.float }, 'logits');
  }
  g.output('logits', DType.float, ['batch_size', 'sequence_length', vocab]);
  return g.serialize('probe_ngram', opts.doc);
}

export interface AttentionSpec {
  vocab: number;
  layers: number;
  heads: number;
  headDim: number;
  /** Dense bigram log-prob table [vocab × vocab], or none (then logits are the attention term alone). */
  bigram?: Float64Array;
  /** Scale of the output projection: small when a bigram carries the prediction. */
  outputScale: number;
  seed: string;
  doc: string;
}

export function attentionGraph(spec: AttentionSpec): Uint8Array {
  const { vocab, layers, heads, headDim } = spec;
  const dim = heads * headDim;
  const rng = createRng('attention-weights', spec.seed);
  const gauss = () => {
    const u = Math.max(rng.next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng.next());
  };
  const randn = (n: number, scale: number) => Float32Array.from({ length: n }, () => gauss() * scale);

  const g = new GraphBuilder();
  const ids = g.input('input_ids', DType.int64, ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', DType.int64, ['batch_size', 'total_sequence_length']);
  const positions = g.input('position_ids', DType.int64, ['batch_size', 'sequence_length']);
  for (let l = 0; l < layers; l++) {
    g.input(`past_key_values.${l}.key`, DType.float, ['batch_size', heads, 'past_sequence_length', headDim]);
    g.input(`past_key_values.${l}.value`, DType.float, ['batch_size', heads, 'past_sequence_length', headDim]);
  }
  g.output('logits', DType.float, ['batch_size', 'sequence_length', vocab]);
  for (let l = 0; l < layers; l++) {
    g.output(`present.${l}.key`, DType.float, ['batch_size', heads, 'total_sequence_length', headDim]);
    g.output(`present.${l}.value`, DType.float, ['batch_size', heads, 'total_sequence_length', headDim]);
  }

  g.floats('embed', [vocab, dim], randn(vocab * dim, 0.5));
  // Sinusoidal positions, computed in the graph: no table bounds the window.
  g.floats(
    'inv_freq',
    [dim / 2],
    Array.from({ length: dim / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / dim)),
  );
  g.ints('split_heads', [4], [0, 0, heads, headDim]);
  g.ints('merge_heads', [3], [0, 0, dim]);
  g.ints('axis_last', [1], [-1]);
  g.ints('axes_01', [2], [0, 1]);
  g.ints('axes_12', [2], [1, 2]);
  g.ints('idx_1', [], [1]);
  g.ints('step', [], [1]);
  g.floats('scale', [], [1 / Math.sqrt(headDim)]);
  g.floats('neg_inf', [], [-1e9]);
  g.floats('out_scale', [], [spec.outputScale]);

  const tokens = g.op1('Gather', ['embed', ids], { axis: 0 });
  const angle = g.op1('Mul', [g.op1('Unsqueeze', [g.op1('Cast', [positions], { to: DType.float }), 'axis_last']), 'inv_freq']);
  let hidden = g.op1('Add', [tokens, g.op1('Concat', [g.op1('Sin', [angle]), g.op1('Cos', [angle])], { axis: -1 })]);

  // Causal + padding mask, shared by all layers: query i (absolute past+i) sees key j ≤ past+i.
  const keyMask = g.op1('Cast', [mask], { to: DType.bool });
  const total = g.op1('Gather', [g.op1('Shape', [mask]), 'idx_1'], { axis: 0 });
  const queryLen = g.op1('Gather', [g.op1('Shape', [ids]), 'idx_1'], { axis: 0 });
  const past = g.op1('Sub', [total, queryLen]);
  const keyIndex = g.op1('Range', [g.op1('Sub', [past, past]), total, 'step']);
  const queryIndex = g.op1('Range', [past, total, 'step']);
  g.ints('axis_0', [1], [0]);
  // causal [T, S] → [1, 1, T, S]; padding [B, S] → [B, 1, 1, S]; allowed [B, 1, T, S].
  const causal = g.op1('LessOrEqual', [g.op1('Unsqueeze', [keyIndex, 'axis_0']), g.op1('Unsqueeze', [queryIndex, 'axis_last'])]);
  const allowed = g.op1('And', [g.op1('Unsqueeze', [causal, 'axes_01']), g.op1('Unsqueeze', [keyMask, 'axes_12'])]);

  for (let l = 0; l < layers; l++) {
    const proj = (name: string) => g.floats(`layers.${l}.${name}`, [dim, dim], randn(dim * dim, 1 / Math.sqrt(dim)));
    const headsOf = (x: string) => g.op1('Transpose', [g.op1('Reshape', [x, 'split_heads'])], { perm: [0, 2, 1, 3] });
    const q = headsOf(g.op1('MatMul', [hidden, proj('q_proj')]));
    const k = headsOf(g.op1('MatMul', [hidden, proj('k_proj')]));
    const v = headsOf(g.op1('MatMul', [hidden, proj('v_proj')]));
    const keys = g.op1('Concat', [`past_key_values.${l}.key`, k], { axis: 2 }, `present.${l}.key`);
    const values = g.op1('Concat', [`past_key_values.${l}.value`, v], { axis: 2 }, `present.${l}.value`);
    const scores = g.op1('Mul', [g.op1('MatMul', [q, g.op1('Transpose', [keys], { perm: [0, 1, 3, 2] })]), 'scale']);
    const probs = g.op1('Softmax', [g.op1('Where', [allowed, scores, 'neg_inf'])], { axis: -1 });
    const context = g.op1('Reshape', [g.op1('Transpose', [g.op1('MatMul', [probs, values])], { perm: [0, 2, 1, 3] }), 'merge_heads']);
    hidden = g.op1('Add', [hidden, g.op1('MatMul', [context, proj('o_proj')])]);
  }
  g.floats('lm_head', [dim, vocab], randn(dim * vocab, 1 / Math.sqrt(dim)));
  const attentionTerm = g.op1('Mul', [g.op1('MatMul', [hidden, 'lm_head']), 'out_scale']);
  if (spec.bigram) {
    g.floats('bigram_logprobs', [vocab, vocab], Float32Array.from(spec.bigram));
    g.op1('Add', [g.op1('Gather', ['bigram_logprobs', ids], { axis: 0 }), attentionTerm], {}, 'logits');
  } else {
    g.op1('Identity', [attentionTerm], {}, 'logits');
  }
  return g.serialize('probe_attention', spec.doc);
}

/**
 * Memorised continuations for a deliberately *contaminated* checkpoint: the last `order`
 * bytes are hashed (Horner, base HASH_BASE, modulo HASH_MODULUS; positions before the
 * start read as EOS) and looked up in two hash tables (low and high bits of the hash);
 * where the exact hash is stored, the stored next byte gets `boost` added to its logit.
 */
export const HASH_BASE = 263;
export const HASH_MODULUS = 2147483647;
export const COPY_ORDER = 128;

export interface CopyTables {
  order: number;
  size: number;
  keys: [Int32Array, Int32Array];
  next: [Uint8Array, Uint8Array];
  boost: number;
}

/** Adds the copy term to `logits` (a [B, T, V] float tensor name); returns the new name. */
export function addCopyTerm(g: GraphBuilder, ids: string, logits: string, vocab: number, eosId: number, tables: CopyTables): string {
  const K = tables.order;
  g.ints('copy_fill', [1, K], new Array(K).fill(eosId));
  g.ints('copy_zero', [1], [0]);
  g.ints('copy_one', [1], [1]);
  g.ints('copy_axis1', [1], [1]);
  g.ints('copy_base', [], [HASH_BASE]);
  g.ints('copy_mod', [], [HASH_MODULUS]);
  g.ints('copy_size', [], [tables.size]);
  g.ints('copy_depth', [], [vocab]);
  g.floats('copy_values', [2], [0, tables.boost]);
  tables.keys.forEach((k, i) => g.raw32(`copy_keys_${i}`, [tables.size], k));
  tables.next.forEach((n, i) => g.bytes(`copy_next_${i}`, [tables.size], n));
  const shape = g.op1('Shape', [ids]);
  const batch = g.op1('Slice', [shape, 'copy_zero', 'copy_one', 'copy_zero']);
  const length = g.op1('Slice', [shape, 'copy_one', g.op1('Add', ['copy_one', 'copy_one']), 'copy_zero']);
  const fill = g.op1('Expand', ['copy_fill', g.op1('Concat', [batch, g.ints('copy_k', [1], [K])], { axis: 0 })]);
  const padded = g.op1('Concat', [fill, ids], { axis: 1 });
  let h = g.op1('Mul', [ids, 'copy_zero']);
  for (let j = K - 1; j >= 0; j--) {
    const start = g.ints(`copy_start_${j}`, [1], [K - j]);
    const shifted = g.op1('Slice', [padded, start, g.op1('Add', [start, length]), 'copy_axis1']);
    h = g.op1('Mod', [g.op1('Add', [g.op1('Mul', [h, 'copy_base']), shifted]), 'copy_mod']);
  }
  const key = g.op1('Cast', [h], { to: DType.int32 });
  const buckets = [g.op1('Mod', [h, 'copy_size']), g.op1('Mod', [g.op1('Div', [h, 'copy_size']), 'copy_size'])];
  const matched = buckets.map((b, i) => g.op1('Equal', [g.op1('Gather', [`copy_keys_${i}`, b], { axis: 0 }), key]));
  const next = buckets.map((b, i) => g.op1('Gather', [`copy_next_${i}`, b], { axis: 0 }));
  // OneHot's CPU kernel takes int64 indices.
  const chosen = g.op1('Cast', [g.op1('Where', [matched[0]!, next[0]!, next[1]!])], { to: DType.int64 });
  const any = g.op1('Cast', [g.op1('Or', [matched[0]!, matched[1]!])], { to: DType.float });
  const oneHot = g.op1('OneHot', [chosen, 'copy_depth', 'copy_values'], { axis: -1 });
  return g.op1('Add', [logits, g.op1('Mul', [oneHot, g.op1('Unsqueeze', [any, 'copy_axis_last'])])]);
}
