/**
 * probe's own decode-step graph for a `TransformerModel` (model.ts: a Hugging Face
 * directory, or a recognised Llama export): one new token for each of B rows that
 * continue one shared prompt.
 *
 * Why its own graph: a checkpoint's forward graph takes each row's whole cache as input
 * and returns it grown by one token, so a step copies every row's past (Concat, the GQA
 * Tile, and the present tensors into JavaScript) — at a 1,000-token prompt and 16 rows,
 * some 100 MB a step for a model whose compute is a few MFLOP. Here the rows' common
 * prompt is one cache read by all of them, and only the tokens each row generated are
 * its own:
 *
 *   inputs   input_ids [B] int64; position [1] float32 (the new token's position, the same
 *            for every row: the rows of one prompt advance together);
 *            prefix.{l}.key|value [1, kv_heads, P, head_dim] — the prompt's cache as the
 *            checkpoint's own graph computed it;
 *            suffix.{l}.key|value [S, B, kv_heads, head_dim] — the rows' generated tokens,
 *            time-major so that appending one is a write at the end of a buffer and the
 *            first S steps of it are fed as a view (onnx/prefix-decoder.ts);
 *            inverse_temperature [1] float32 (the rows of one prompt share a request);
 *   outputs  probs [B, vocab] (softmax of logits / temperature), logprobs [B, vocab]
 *            (log-softmax of the logits), new.{l}.key|value [B, kv_heads, head_dim]
 *            (key after RoPE).
 *
 * Everything but attention is the layers every graph of the model shares (layers.ts).
 * Attention to the prompt is one matrix product per KV head with the rows' queries
 * stacked as B × group rows; that product never has a single row (a zero row is added
 * where B × group would be 1), because onnxruntime runs one-row products through another
 * kernel, which rounds differently — so a row's logits are the same bits whatever B is.
 * Scores over prompt and generated keys are one softmax, after soft-capping and each
 * layer's sliding window where the model has them.
 */
import { DType, GraphBuilder } from '../onnx/graph-builder.ts';
import { type GraphWriter, writer } from '../onnx/written-graph.ts';
import { LayerBuilder, TO_END } from './layers.ts';
import type { TransformerModel } from './model.ts';

export function buildDecodeGraph(model: TransformerModel): GraphWriter {
  const { spec } = model;
  const { heads, kvHeads, headDim, vocab } = spec;
  const group = heads / kvHeads;
  const g = new GraphBuilder();
  const b = new LayerBuilder(g, model);
  const c = b.c;
  const ids = g.input('input_ids', DType.int64, ['batch']);
  const position = g.input('position', DType.float, [1]);
  const inverseTemperature = g.input('inverse_temperature', DType.float, [1]);
  const scale = c.float(spec.attention.scale);
  const rows = g.op1('Shape', [ids]);
  const axis = (n: number) => c.ints([n]);

  // Without GQA a stacked product over one row would have a single row: a zero row keeps it at two or more, and is cut off after.
  const padded = group === 1;
  const padRow = (stacked: string) =>
    padded
      ? g.op1('Concat', [stacked, g.op1('Slice', [g.op1('Mul', [stacked, c.float(0)]), axis(0), axis(1), axis(1)])], { axis: 1 })
      : stacked;
  const unpad = (stacked: string) => (padded ? g.op1('Slice', [stacked, axis(0), rows, axis(1)]) : stacked);
  const windowMasks = new Map<number, string>();
  /** Whether each key (prompt 0 … P − 1, then the rows' own P … position) lies within `window` of the new token. */
  const windowMask = (window: number, keys: string) => {
    let mask = windowMasks.get(window);
    if (!mask) {
      const keyPositions = g.op1('Cast', [g.op1('Range', [c.int(0), g.op1('Squeeze', [keys, axis(0)]), c.int(1)])], { to: DType.float });
      mask = g.op1('Less', [g.op1('Sub', [position, keyPositions]), c.float(window)]);
      windowMasks.set(window, mask);
    }
    return mask;
  };

  const core = (l: number, q: string, k: string, v: string) => {
    const prefixKey = g.input(`prefix.${l}.key`, DType.float, [1, kvHeads, 'prefix', headDim]);
    const prefixValue = g.input(`prefix.${l}.value`, DType.float, [1, kvHeads, 'prefix', headDim]);
    const suffixKey = g.input(`suffix.${l}.key`, DType.float, ['suffix', 'batch', kvHeads, headDim]);
    const suffixValue = g.input(`suffix.${l}.value`, DType.float, ['suffix', 'batch', kvHeads, headDim]);
    g.op1('Identity', [k], {}, `new.${l}.key`);
    g.op1('Identity', [v], {}, `new.${l}.value`);

    // Scores over the prompt: queries [B, kv, group, d] stacked per KV head as [kv, B·group, d], one product with [kv, d, P].
    const queries = g.op1('Reshape', [q, c.ints([0, kvHeads, group, headDim])]);
    const toKvStacked = c.ints([kvHeads, -1, headDim]);
    const stacked = padRow(g.op1('Reshape', [g.op1('Transpose', [queries], { perm: [1, 0, 2, 3] }), toKvStacked]));
    const promptLength = g.op1('Shape', [prefixKey], { start: 2, end: 3 });
    const promptKeys = g.op1('Reshape', [prefixKey, toKvStacked]);
    const promptValues = g.op1('Reshape', [prefixValue, toKvStacked]);
    const promptScores = g.op1('Mul', [g.op1('MatMul', [stacked, g.op1('Transpose', [promptKeys], { perm: [0, 2, 1] })]), scale]);
    const toKvRowsGroupPrompt = g.op1('Concat', [c.ints([kvHeads, -1, group]), promptLength], { axis: 0 });
    const promptScoresByRow = g.op1('Transpose', [g.op1('Reshape', [unpad(promptScores), toKvRowsGroupPrompt])], { perm: [1, 0, 2, 3] });

    // Scores over each row's own tokens, generated so far and this one: [S+1, B, kv, d] → [B, kv, d, S+1]. (They are one
    // product with this step's key and value concatenated: a product over the S = 0 earlier ones alone, at the first step,
    // stops onnxruntime.)
    const ownKeys = g.op1('Concat', [suffixKey, g.op1('Unsqueeze', [k, axis(0)])], { axis: 0 });
    const ownValues = g.op1('Concat', [suffixValue, g.op1('Unsqueeze', [v, axis(0)])], { axis: 0 });
    const ownScores = g.op1('Mul', [g.op1('MatMul', [queries, g.op1('Transpose', [ownKeys], { perm: [1, 2, 3, 0] })]), scale]);

    // One softmax over both (capped and windowed where the model says), then each part times its values.
    let scores = g.op1('Concat', [promptScoresByRow, ownScores], { axis: -1 });
    if (spec.attention.softcap !== undefined) scores = b.softcap(scores, spec.attention.softcap);
    const window = spec.attention.windows[l];
    if (window !== undefined) {
      const keys = g.op1('Add', [promptLength, g.op1('Shape', [ownKeys], { start: 0, end: 1 })]);
      scores = g.op1('Where', [windowMask(window, keys), scores, c.float(Number.NEGATIVE_INFINITY)]);
    }
    const probs = g.op1('Softmax', [scores], { axis: -1 });
    const promptProbs = g.op1('Slice', [probs, axis(0), promptLength, axis(-1)]);
    const ownProbs = g.op1('Slice', [probs, promptLength, axis(TO_END), axis(-1)]);
    const toKvStackedPrompt = g.op1('Concat', [c.ints([kvHeads, -1]), promptLength], { axis: 0 });
    const promptProbsStacked = padRow(g.op1('Reshape', [g.op1('Transpose', [promptProbs], { perm: [1, 0, 2, 3] }), toKvStackedPrompt]));
    const fromPrompt = g.op1(
      'Transpose',
      [g.op1('Reshape', [unpad(g.op1('MatMul', [promptProbsStacked, promptValues])), c.ints([kvHeads, -1, group, headDim])])],
      {
        perm: [1, 0, 2, 3],
      },
    );
    const fromOwn = g.op1('MatMul', [ownProbs, g.op1('Transpose', [ownValues], { perm: [1, 2, 0, 3] })]);
    return g.op1('Reshape', [g.op1('Add', [fromPrompt, fromOwn]), c.ints([0, heads * headDim])]);
  };

  const logits = b.head(b.layers(b.embed(ids), b.rotary(position), core));
  // What a draw reads (logits.ts chooseTokenFromProbs): the tempered softmax and the untempered log-softmax, both
  // computed row by row by onnxruntime's softmax kernels (so also the same bits whatever B is).
  g.op1('Softmax', [g.op1('Mul', [logits, inverseTemperature])], { axis: -1 }, 'probs');
  g.op1('LogSoftmax', [logits], { axis: -1 }, 'logprobs');

  g.output('probs', DType.float, ['batch', vocab]);
  g.output('logprobs', DType.float, ['batch', vocab]);
  for (let l = 0; l < spec.layers; l++) {
    g.output(`new.${l}.key`, DType.float, ['batch', kvHeads, headDim]);
    g.output(`new.${l}.value`, DType.float, ['batch', kvHeads, headDim]);
  }
  return writer(g, 'probe_shared_prefix_decode', `shared-prefix decode step over ${spec.layers} ${spec.family} layers`);
}
