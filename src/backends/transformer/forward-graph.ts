/**
 * The forward graph of a `TransformerModel` (a Hugging Face directory read by
 * hf/checkpoint.ts), in the layout of an Optimum / transformers.js export, so the ONNX
 * backend runs it as it runs an export (onnx/graph.ts):
 *
 *   inputs   input_ids [B, S] int64, position_ids [B, S] int64,
 *            past_key_values.{l}.key|value [B, kv_heads, P, head_dim] float32,
 *            num_logits_to_keep [] int64 (0: every position; n: the last n);
 *   outputs  logits [B, kept, vocab], present.{l}.key|value [B, kv_heads, P + S, head_dim].
 *
 * No attention_mask: probe's rows are padded on the right, which causal attention never
 * reads, so the mask is the causal one, cut to each layer's sliding window where it has
 * one (keys at positions 0 … P + S − 1, the cache holding the sequence from its start).
 */
import { DType, GraphBuilder } from '../onnx/graph-builder.ts';
import { type GraphWriter, writer } from '../onnx/written-graph.ts';
import { LayerBuilder, TO_END } from './layers.ts';
import type { TransformerModel } from './model.ts';

export function buildForwardGraph(model: TransformerModel): GraphWriter {
  const { spec } = model;
  const { heads, kvHeads, headDim, vocab } = spec;
  const group = heads / kvHeads;
  const g = new GraphBuilder();
  const b = new LayerBuilder(g, model);
  const c = b.c;
  const ids = g.input('input_ids', DType.int64, ['batch', 'sequence']);
  const positionIds = g.input('position_ids', DType.int64, ['batch', 'sequence']);
  const keep = g.input('num_logits_to_keep', DType.int64, []);

  const batchSeq = g.op1('Shape', [ids]); // [B, S]
  const flatIds = g.op1('Reshape', [ids, c.ints([-1])]);
  const positions = g.op1('Cast', [g.op1('Reshape', [positionIds, c.ints([-1])])], { to: DType.float });
  const rope = b.rotary(positions);

  const pasts = Array.from({ length: spec.layers }, (_, l) =>
    (['key', 'value'] as const).map((kind) => g.input(`past_key_values.${l}.${kind}`, DType.float, ['batch', kvHeads, 'past', headDim])),
  );

  // Keys 0 … T − 1 (T = P + S) against each query's position; rows of the grouped scores are (group member, query).
  const pastLength = g.op1('Shape', [pasts[0]![0]!], { start: 2, end: 3 });
  const total = g.op1('Squeeze', [g.op1('Add', [pastLength, g.op1('Shape', [ids], { start: 1, end: 2 })]), c.ints([0])]);
  const keyPositions = g.op1('Cast', [g.op1('Range', [c.int(0), total, c.int(1)])], { to: DType.float });
  const queryPositions = g.op1('Cast', [positionIds], { to: DType.float }); // [B, S]
  // [B, 1, group · S, 1]: each query's position repeated for the group's heads.
  const queryRows = g.op1('Reshape', [
    g.op1('Tile', [g.op1('Unsqueeze', [queryPositions, c.ints([1])]), c.ints([1, group, 1])]),
    c.ints([0, 1, -1, 1]),
  ]);
  const distance = g.op1('Sub', [queryRows, keyPositions]); // [B, 1, group · S, T]: how far back each key is
  // Each window's mask once per pass, as 0 where a key is seen and −∞ where not, added to every layer's scores
  // (an Add; a Where per layer took a fifth of a small model's pass).
  const masks = new Map<number | undefined, string>();
  const maskOf = (window: number | undefined) => {
    let mask = masks.get(window);
    if (!mask) {
      const causal = g.op1('GreaterOrEqual', [distance, c.float(0)]);
      const seen = window === undefined ? causal : g.op1('And', [causal, g.op1('Less', [distance, c.float(window)])]);
      mask = g.op1('Where', [seen, c.float(0), c.float(Number.NEGATIVE_INFINITY)]);
      masks.set(window, mask);
    }
    return mask;
  };

  const core = (l: number, q: string, k: string, v: string) => {
    const [pastKey, pastValue] = pasts[l]!;
    // [N, h, d] → [B, h, S, d]
    const byBatch = (x: string, n: number) =>
      g.op1('Transpose', [g.op1('Reshape', [x, g.op1('Concat', [batchSeq, c.ints([n, headDim])], { axis: 0 })])], { perm: [0, 2, 1, 3] });
    const keys = g.op1('Concat', [pastKey!, byBatch(k, kvHeads)], { axis: 2 }, `present.${l}.key`);
    const values = g.op1('Concat', [pastValue!, byBatch(v, kvHeads)], { axis: 2 }, `present.${l}.value`);
    // Queries of one KV head's group stacked: [B, kv, group · S, d] (heads j·group … j·group + group − 1 read KV head j).
    const grouped = g.op1('Reshape', [byBatch(q, heads), c.ints([0, kvHeads, -1, headDim])]);
    let scores = g.op1('Mul', [
      g.op1('MatMul', [grouped, g.op1('Transpose', [keys], { perm: [0, 1, 3, 2] })]),
      c.float(spec.attention.scale),
    ]);
    if (spec.attention.softcap !== undefined) scores = b.softcap(scores, spec.attention.softcap);
    const probs = g.op1('Softmax', [g.op1('Add', [scores, maskOf(spec.attention.windows[l])])], { axis: -1 });
    const out = g.op1('Reshape', [g.op1('MatMul', [probs, values]), c.ints([0, heads, -1, headDim])]); // [B, h, S, d]
    return g.op1('Reshape', [g.op1('Transpose', [out], { perm: [0, 2, 1, 3] }), c.ints([-1, heads * headDim])]);
  };

  const hidden = b.layers(b.embed(flatIds), rope, core);
  // Only the last `num_logits_to_keep` positions of each row reach the head (0 keeps them all).
  const byRow = g.op1('Reshape', [hidden, g.op1('Concat', [batchSeq, c.ints([spec.hidden])], { axis: 0 })]);
  const kept = g.op1('Slice', [byRow, g.op1('Neg', [g.op1('Reshape', [keep, c.ints([1])])]), c.ints([TO_END]), c.ints([1])]);
  g.op1('Identity', [b.head(kept)], {}, 'logits');

  g.output('logits', DType.float, ['batch', 'kept', vocab]);
  for (let l = 0; l < spec.layers; l++) {
    g.output(`present.${l}.key`, DType.float, ['batch', kvHeads, 'total', headDim]);
    g.output(`present.${l}.value`, DType.float, ['batch', kvHeads, 'total', headDim]);
  }
  return writer(g, 'probe_forward', `forward pass with a key/value cache over ${spec.layers} ${spec.family} layers`);
}
