/**
 * probe's own decode-step graph for a Llama-architecture export (llama-export.ts): one
 * new token for each of B rows that continue one shared prompt.
 *
 * Why its own graph: an exported graph takes each row's whole cache as input and returns
 * it grown by one token, so a step copies every row's past (Concat, the GQA Tile, and the
 * present tensors into JavaScript) — at a 1,000-token prompt and 16 rows, some 100 MB a
 * step for a model whose compute is a few MFLOP. Here the rows' common prompt is one
 * cache read by all of them, and only the tokens each row generated are its own:
 *
 *   inputs   input_ids [B] int64; position [1] float32 (the new token's position, the same
 *            for every row: the rows of one prompt advance together);
 *            prefix.{l}.key|value [1, kv_heads, P, head_dim] — the prompt's cache as the
 *            checkpoint's own graph computed it;
 *            suffix.{l}.key|value [S, B, kv_heads, head_dim] — the rows' generated tokens,
 *            time-major so that appending one is a write at the end of a buffer and the
 *            first S steps of it are fed as a view (prefix-decoder.ts);
 *            inverse_temperature [1] float32 (the rows of one prompt share a request);
 *   outputs  probs [B, vocab] (softmax of logits / temperature), logprobs [B, vocab]
 *            (log-softmax of the logits), new.{l}.key|value [B, kv_heads, head_dim]
 *            (key after RoPE).
 *
 * The arithmetic is the export's, op for op where it can be (RMSNorm as Pow, ReduceMean,
 * Add ε, Sqrt, Div, Mul; RoPE from position × inverse frequency through Cos/Sin; scores
 * scaled after the product; softmax over prompt and generated keys together). Attention
 * to the prompt is one matrix product per KV head with the rows' queries stacked as
 * B × group rows; that product never has a single row (a zero row is added where
 * B × group would be 1), because onnxruntime runs one-row products through another
 * kernel, which rounds differently — so a row's logits are the same bits whatever B is.
 */
import { DType, GraphBuilder } from './graph-builder.ts';
import type { LlamaExport, Weight } from './llama-export.ts';

export function buildDecodeGraph(model: LlamaExport): Uint8Array {
  const { shape, layers } = model;
  const { heads, kvHeads, headDim, vocab } = shape;
  const group = heads / kvHeads;
  const half = headDim / 2;
  const g = new GraphBuilder();
  const ids = g.input('input_ids', DType.int64, ['batch']);
  const position = g.input('position', DType.float, [1]);
  const inverseTemperature = g.input('inverse_temperature', DType.float, [1]);
  const int64s = (name: string, values: number[]) => g.ints(name, [values.length], values);
  const scalar = (name: string, value: number) => g.floats(name, [], [value]);
  const weight = (name: string, w: Weight) => g.floatBytes(name, w.dims, w.bytes);

  const two = scalar('two', 2);
  const one = scalar('one', 1);
  const eps = scalar('eps', shape.eps);
  const scale = scalar('scale', 1 / Math.sqrt(headDim));
  const zero = scalar('zero', 0);
  const axis0 = int64s('axis_0', [0]);
  const axis1 = int64s('axis_1', [1]);
  const axisLast = int64s('axis_last', [-1]);
  const start0 = int64s('start_0', [0]);
  const halfway = int64s('start_half', [half]);
  const end = int64s('end', [2 ** 62]);
  const oneRow = int64s('one_row', [1]);
  const toRowsHeads = int64s('shape_rows_heads_dim', [0, heads, headDim]);
  const toRowsKv = int64s('shape_rows_kv_dim', [0, kvHeads, headDim]);
  const toRowsKvGroup = int64s('shape_rows_kv_group_dim', [0, kvHeads, group, headDim]);
  const toKvStacked = int64s('shape_kv_stacked_dim', [kvHeads, -1, headDim]);
  const toKvRowsGroup = int64s('shape_kv_rows_group_dim', [kvHeads, -1, group, headDim]);
  const toRowsAttention = int64s('shape_rows_attention', [0, heads * headDim]);
  const kvMinusOne = int64s('kv_minus_one', [kvHeads, -1]);
  const kvMinusOneGroup = int64s('kv_minus_one_group', [kvHeads, -1, group]);
  // torch's inverse frequencies 1 / θ^(2i/d), rounded to float32 as torch holds them.
  const invFreq = new Float32Array(half);
  for (let i = 0; i < half; i++) invFreq[i] = 1 / shape.ropeTheta ** Math.fround((2 * i) / headDim);
  const freqs = g.op1('Mul', [position, g.floats('inv_freq', [half], invFreq)]);
  const angles = g.op1('Concat', [freqs, freqs], { axis: 0 });
  const cos = g.op1('Cos', [angles]);
  const sin = g.op1('Sin', [angles]);
  const rows = g.op1('Shape', [ids]);

  const rmsNorm = (x: string, w: string) => {
    const meanSquare = g.op1('ReduceMean', [g.op1('Pow', [x, two])], { axes: [-1], keepdims: 1 });
    const inverse = g.op1('Div', [one, g.op1('Sqrt', [g.op1('Add', [meanSquare, eps])])]);
    return g.op1('Mul', [w, g.op1('Mul', [x, inverse])]);
  };
  /** x·cos + rotate_half(x)·sin over the last axis (HF's rotate_half: [−x₂, x₁]). */
  const rope = (x: string) => {
    const first = g.op1('Slice', [x, start0, halfway, axisLast]);
    const second = g.op1('Slice', [x, halfway, end, axisLast]);
    const rotated = g.op1('Concat', [g.op1('Neg', [second]), first], { axis: -1 });
    return g.op1('Add', [g.op1('Mul', [x, cos]), g.op1('Mul', [rotated, sin])]);
  };
  // Without GQA a stacked product over one row would have a single row: a zero row keeps it at two or more, and is cut off after.
  const padded = group === 1;
  const padRow = (stacked: string) =>
    padded ? g.op1('Concat', [stacked, g.op1('Slice', [g.op1('Mul', [stacked, zero]), start0, oneRow, axis1])], { axis: 1 }) : stacked;
  const unpad = (stacked: string) => (padded ? g.op1('Slice', [stacked, start0, rows, axis1]) : stacked);

  let x = g.op1('Gather', [weight('embed_tokens', model.embed), ids]);
  layers.forEach((layer, l) => {
    const w = (name: string, value: Weight) => weight(`layers.${l}.${name}`, value);
    const prefixKey = g.input(`prefix.${l}.key`, DType.float, [1, kvHeads, 'prefix', headDim]);
    const prefixValue = g.input(`prefix.${l}.value`, DType.float, [1, kvHeads, 'prefix', headDim]);
    const suffixKey = g.input(`suffix.${l}.key`, DType.float, ['suffix', 'batch', kvHeads, headDim]);
    const suffixValue = g.input(`suffix.${l}.value`, DType.float, ['suffix', 'batch', kvHeads, headDim]);

    const h = rmsNorm(x, w('input_norm', layer.inputNorm));
    const q = rope(g.op1('Reshape', [g.op1('MatMul', [h, w('q', layer.q)]), toRowsHeads]));
    const k = rope(g.op1('Reshape', [g.op1('MatMul', [h, w('k', layer.k)]), toRowsKv]));
    const v = g.op1('Reshape', [g.op1('MatMul', [h, w('v', layer.v)]), toRowsKv]);
    g.op1('Identity', [k], {}, `new.${l}.key`);
    g.op1('Identity', [v], {}, `new.${l}.value`);

    // Scores over the prompt: queries [B, kv, group, d] stacked per KV head as [kv, B·group, d], one product with [kv, d, P].
    const queries = g.op1('Reshape', [q, toRowsKvGroup]);
    const stacked = padRow(g.op1('Reshape', [g.op1('Transpose', [queries], { perm: [1, 0, 2, 3] }), toKvStacked]));
    const promptLength = g.op1('Shape', [prefixKey], { start: 2, end: 3 });
    const promptKeys = g.op1('Reshape', [prefixKey, toKvStacked]);
    const promptValues = g.op1('Reshape', [prefixValue, toKvStacked]);
    const promptScores = g.op1('Mul', [g.op1('MatMul', [stacked, g.op1('Transpose', [promptKeys], { perm: [0, 2, 1] })]), scale]);
    const toKvRowsGroupPrompt = g.op1('Concat', [kvMinusOneGroup, promptLength], { axis: 0 });
    const promptScoresByRow = g.op1('Transpose', [g.op1('Reshape', [unpad(promptScores), toKvRowsGroupPrompt])], { perm: [1, 0, 2, 3] });

    // Scores over each row's own tokens, generated so far and this one: [S+1, B, kv, d] → [B, kv, d, S+1]. (They are one
    // product with this step's key and value concatenated: a product over the S = 0 earlier ones alone, at the first step,
    // stops onnxruntime.)
    const ownKeys = g.op1('Concat', [suffixKey, g.op1('Unsqueeze', [k, axis0])], { axis: 0 });
    const ownValues = g.op1('Concat', [suffixValue, g.op1('Unsqueeze', [v, axis0])], { axis: 0 });
    const ownScores = g.op1('Mul', [g.op1('MatMul', [queries, g.op1('Transpose', [ownKeys], { perm: [1, 2, 3, 0] })]), scale]);

    // One softmax over both, then each part times its values.
    const probs = g.op1('Softmax', [g.op1('Concat', [promptScoresByRow, ownScores], { axis: -1 })], { axis: -1 });
    const promptProbs = g.op1('Slice', [probs, start0, promptLength, axisLast]);
    const ownProbs = g.op1('Slice', [probs, promptLength, end, axisLast]);
    const toKvStackedPrompt = g.op1('Concat', [kvMinusOne, promptLength], { axis: 0 });
    const promptProbsStacked = padRow(g.op1('Reshape', [g.op1('Transpose', [promptProbs], { perm: [1, 0, 2, 3] }), toKvStackedPrompt]));
    const fromPrompt = g.op1('Transpose', [g.op1('Reshape', [unpad(g.op1('MatMul', [promptProbsStacked, promptValues])), toKvRowsGroup])], {
      perm: [1, 0, 2, 3],
    });
    const fromOwn = g.op1('MatMul', [ownProbs, g.op1('Transpose', [ownValues], { perm: [1, 2, 0, 3] })]);
    const attention = g.op1('Reshape', [g.op1('Add', [fromPrompt, fromOwn]), toRowsAttention]);
    x = g.op1('Add', [x, g.op1('MatMul', [attention, w('o', layer.o)])]);

    const m = rmsNorm(x, w('post_norm', layer.postNorm));
    const gate = g.op1('MatMul', [m, w('gate', layer.gate)]);
    const act = g.op1('Mul', [gate, g.op1('Sigmoid', [gate])]);
    const up = g.op1('MatMul', [m, w('up', layer.up)]);
    x = g.op1('Add', [x, g.op1('MatMul', [g.op1('Mul', [act, up]), w('down', layer.down)])]);
  });
  // What a draw reads (logits.ts chooseTokenFromProbs): the tempered softmax and the untempered log-softmax, both
  // computed row by row by onnxruntime's softmax kernels (so also the same bits whatever B is).
  const logits = g.op1('MatMul', [rmsNorm(x, weight('final_norm', model.finalNorm)), weight('lm_head', model.head)]);
  g.op1('Softmax', [g.op1('Mul', [logits, inverseTemperature])], { axis: -1 }, 'probs');
  g.op1('LogSoftmax', [logits], { axis: -1 }, 'logprobs');

  g.output('probs', DType.float, ['batch', vocab]);
  g.output('logprobs', DType.float, ['batch', vocab]);
  layers.forEach((_, l) => {
    g.output(`new.${l}.key`, DType.float, ['batch', kvHeads, headDim]);
    g.output(`new.${l}.value`, DType.float, ['batch', kvHeads, headDim]);
  });
  return g.serialize('probe_shared_prefix_decode', `shared-prefix decode step over ${layers.length} Llama layers`, 'probe');
}
