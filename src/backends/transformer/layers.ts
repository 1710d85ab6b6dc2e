/**
 * The one builder of a transformer's layers, shared by every graph probe builds from a
 * `TransformerModel` (model.ts): the forward graph of a Hugging Face directory
 * (forward-graph.ts) and the shared-prefix decode graph (decode-graph.ts). Tokens are
 * rows: x is [N, hidden] whatever batch and sequence they came from, so everything but
 * attention — norms, projections, RoPE, the MLP, the head — is the same ops in both
 * graphs, and each graph supplies only its attention core (how queries meet the cached
 * keys and values).
 *
 * The arithmetic is transformers' eager path, op for op where ONNX has the op (RMSNorm as
 * x · 1/√(mean(x²) + ε) · w, RoPE as x·cos + rotate_half(x)·sin, scores scaled after the
 * product, soft-capping as cap · tanh(s / cap)), all in float32.
 */
import type { GraphBuilder } from '../onnx/graph-builder.ts';
import type { Activation, Linear, Norm, TransformerModel } from './model.ts';

/** q [N, heads, head_dim] and k, v [N, kv_heads, head_dim] after RoPE → attention output [N, heads · head_dim]. */
export type AttentionCore = (layer: number, q: string, k: string, v: string) => string;

/** Named constants of one graph, each made once. */
export class Constants {
  private readonly made = new Map<string, string>();
  constructor(private readonly g: GraphBuilder) {}

  float(value: number): string {
    return this.once(`f:${value}`, (name) => this.g.floats(name, [], [value]));
  }

  /** An int64 scalar. */
  int(value: number): string {
    return this.once(`i0:${value}`, (name) => this.g.ints(name, [], [value]));
  }

  ints(values: number[]): string {
    return this.once(`i:${values.join(',')}`, (name) => this.g.ints(name, [values.length], values));
  }

  private once(key: string, make: (name: string) => string): string {
    let name = this.made.get(key);
    if (name === undefined) {
      name = make(`const_${this.made.size}`);
      this.made.set(key, name);
    }
    return name;
  }
}

/** The largest int64 a Slice end needs: "to the end". */
export const TO_END = 2 ** 62;

export class LayerBuilder {
  readonly c: Constants;
  private readonly spec: TransformerModel['spec'];

  constructor(
    readonly g: GraphBuilder,
    private readonly model: TransformerModel,
  ) {
    this.c = new Constants(g);
    this.spec = model.spec;
  }

  /** Token embeddings [N, hidden] of ids [N] (int64). */
  embed(ids: string): string {
    const x = this.g.op1('Gather', [this.g.weight('embed_tokens', this.model.weights.embed), ids]);
    return this.spec.embedScale === undefined ? x : this.g.op1('Mul', [x, this.c.float(Math.fround(this.spec.embedScale))]);
  }

  /**
   * cos and sin of each row's position, [M, 1, rotary dims] for positions [M] (float32):
   * one per token, or one shared by every row (M = 1) in a decode step.
   */
  rotary(positions: string): { cos: string; sin: string } {
    const { invFreq, attentionFactor } = this.spec.rotary;
    const g = this.g;
    const freqs = g.op1('Mul', [g.op1('Unsqueeze', [positions, this.c.ints([1])]), g.floats('inv_freq', [invFreq.length], invFreq)]);
    const angles = g.op1('Concat', [freqs, freqs], { axis: -1 });
    const scaled = (x: string) => (attentionFactor === 1 ? x : g.op1('Mul', [x, this.c.float(attentionFactor)]));
    const rows = (x: string) => g.op1('Unsqueeze', [scaled(x), this.c.ints([1])]);
    return { cos: rows(g.op1('Cos', [angles])), sin: rows(g.op1('Sin', [angles])) };
  }

  /** The layers over x [N, hidden]; returns the final norm's output [N, hidden]. */
  layers(x: string, rope: { cos: string; sin: string }, core: AttentionCore): string {
    this.model.weights.layers.forEach((_, l) => {
      x = this.layer(l, x, rope, core);
    });
    return this.norm(x, this.model.weights.finalNorm, 'final_norm');
  }

  /** Logits [N, vocab] of final hidden states [N, hidden] (soft-capped where the model caps them). */
  head(h: string): string {
    const logits = this.g.op1('MatMul', [h, this.g.weight('lm_head', this.model.weights.head)]);
    return this.spec.finalSoftcap === undefined ? logits : this.softcap(logits, this.spec.finalSoftcap);
  }

  softcap(x: string, cap: number): string {
    return this.g.op1('Mul', [this.g.op1('Tanh', [this.g.op1('Div', [x, this.c.float(cap)])]), this.c.float(cap)]);
  }

  private layer(l: number, x: string, rope: { cos: string; sin: string }, core: AttentionCore): string {
    const g = this.g;
    const weights = this.model.weights.layers[l]!;
    const norm = (input: string, i: number) => this.norm(input, weights.norms[i]!, `layers.${l}.norm_${i}`);
    const attention = (input: string) => this.attention(l, input, rope, core);
    const mlp = (input: string) => this.mlp(l, input);
    const add = (a: string, b: string) => g.op1('Add', [a, b]);
    switch (this.spec.block) {
      case 'pre': {
        const h = add(x, attention(norm(x, 0)));
        return add(h, mlp(norm(h, 1)));
      }
      case 'post': {
        const h = add(x, norm(attention(x), 0));
        return add(h, norm(mlp(h), 1));
      }
      case 'sandwich': {
        const h = add(x, norm(attention(norm(x, 0)), 1));
        return add(h, norm(mlp(norm(h, 2)), 3));
      }
      case 'parallel':
        // transformers: mlp_output + attn_output + hidden_states, in that order.
        return add(add(mlp(norm(x, 1)), attention(norm(x, 0))), x);
    }
  }

  private attention(l: number, h: string, rope: { cos: string; sin: string }, core: AttentionCore): string {
    const g = this.g;
    const { heads, kvHeads, headDim } = this.spec;
    const weights = this.model.weights.layers[l]!;
    const name = (part: string) => `layers.${l}.${part}`;
    let q: string;
    let k: string;
    let v: string;
    const qkv = weights.qkv;
    if (qkv.kind === 'separate') {
      q = this.linear(h, qkv.q, name('q'));
      k = this.linear(h, qkv.k, name('k'));
      v = this.linear(h, qkv.v, name('v'));
    } else if (qkv.kind === 'fused-per-head') {
      // GPT-NeoX: [N, heads, 3 · head_dim], each head's q | k | v.
      const fused = g.op1('Reshape', [this.linear(h, qkv.qkv, name('qkv')), this.c.ints([0, heads, 3 * headDim])]);
      [q, k, v] = g.op('Split', [fused, this.c.ints([headDim, headDim, headDim])], { axis: -1 }, 3) as [string, string, string];
    } else {
      // Phi-3: q for every head, then k, then v.
      [q, k, v] = g.op(
        'Split',
        [this.linear(h, qkv.qkv, name('qkv')), this.c.ints([heads * headDim, kvHeads * headDim, kvHeads * headDim])],
        { axis: -1 },
        3,
      ) as [string, string, string];
    }
    if (this.spec.qkNorm === 'projection') {
      q = this.norm(q, weights.qNorm!, name('q_norm'));
      k = this.norm(k, weights.kNorm!, name('k_norm'));
    }
    const perHead = (x: string, n: number) => (qkv.kind === 'fused-per-head' ? x : g.op1('Reshape', [x, this.c.ints([0, n, headDim])]));
    q = perHead(q, heads);
    k = perHead(k, kvHeads);
    v = perHead(v, kvHeads);
    if (this.spec.qkNorm === 'head') {
      q = this.norm(q, weights.qNorm!, name('q_norm'));
      k = this.norm(k, weights.kNorm!, name('k_norm'));
    }
    const out = core(l, this.rope(q, rope), this.rope(k, rope), v);
    return this.linear(out, weights.o, name('o'));
  }

  /** x·cos + rotate_half(x)·sin over the rotary dims (transformers' rotate_half: [−x₂, x₁]); the rest of each head passes. */
  private rope(x: string, { cos, sin }: { cos: string; sin: string }): string {
    const g = this.g;
    const { dims } = this.spec.rotary;
    const slice = (from: string, start: number, end: number) =>
      g.op1('Slice', [from, this.c.ints([start]), this.c.ints([end]), this.c.ints([-1])]);
    const partial = dims < this.spec.headDim;
    const rot = partial ? slice(x, 0, dims) : x;
    const first = slice(rot, 0, dims / 2);
    const second = slice(rot, dims / 2, TO_END);
    const rotated = g.op1('Concat', [g.op1('Neg', [second]), first], { axis: -1 });
    const turned = g.op1('Add', [g.op1('Mul', [rot, cos]), g.op1('Mul', [rotated, sin])]);
    return partial ? g.op1('Concat', [turned, slice(x, dims, TO_END)], { axis: -1 }) : turned;
  }

  private mlp(l: number, h: string): string {
    const g = this.g;
    const weights = this.model.weights.layers[l]!;
    const name = (part: string) => `layers.${l}.${part}`;
    const { activation } = this.spec.mlp;
    let inner: string;
    const m = weights.mlp;
    if (m.kind === 'gated')
      inner = g.op1('Mul', [this.activate(this.linear(h, m.gate, name('gate')), activation), this.linear(h, m.up, name('up'))]);
    else if (m.kind === 'fused-gate-up') {
      // Phi-3: gate | up; transformers computes up · act(gate).
      const half = m.gateUp.weight.dims[1]! / 2;
      const [gate, up] = g.op('Split', [this.linear(h, m.gateUp, name('gate_up')), this.c.ints([half, half])], { axis: -1 }, 2) as [
        string,
        string,
      ];
      inner = g.op1('Mul', [up!, this.activate(gate!, activation)]);
    } else inner = this.activate(this.linear(h, m.up, name('up')), activation);
    return this.linear(inner, weights.down, name('down'));
  }

  private activate(x: string, activation: Activation): string {
    const g = this.g;
    const c = this.c;
    switch (activation) {
      case 'silu':
        return g.op1('Mul', [x, g.op1('Sigmoid', [x])]);
      case 'gelu':
        // torch: x · 0.5 · (1 + erf(x · 1/√2)).
        return g.op1('Mul', [
          g.op1('Mul', [x, c.float(0.5)]),
          g.op1('Add', [c.float(1), g.op1('Erf', [g.op1('Mul', [x, c.float(Math.SQRT1_2)])])]),
        ]);
      case 'gelu-tanh': {
        // 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))).
        const cube = g.op1('Mul', [g.op1('Mul', [x, x]), x]);
        const inner = g.op1('Mul', [c.float(Math.sqrt(2 / Math.PI)), g.op1('Add', [x, g.op1('Mul', [c.float(0.044715), cube])])]);
        return g.op1('Mul', [g.op1('Mul', [c.float(0.5), x]), g.op1('Add', [c.float(1), g.op1('Tanh', [inner])])]);
      }
    }
  }

  private linear(x: string, linear: Linear, name: string): string {
    const product = this.g.op1('MatMul', [x, this.g.weight(name, linear.weight)]);
    return linear.bias ? this.g.op1('Add', [product, this.g.weight(`${name}.bias`, linear.bias)]) : product;
  }

  /** The model's norm over the last axis (its weight is the last axis's length: hidden, head_dim or a projection's width). */
  private norm(x: string, norm: Norm, name: string): string {
    const g = this.g;
    const { kind, eps } = this.spec.norm;
    const weight = g.weight(name, norm.weight);
    if (kind === 'layer')
      return g.op1('LayerNormalization', [x, weight, g.weight(`${name}.bias`, norm.bias!)], { axis: -1, epsilon: { float: eps } });
    const meanSquare = g.op1('ReduceMean', [g.op1('Pow', [x, this.c.float(2)])], { axes: [-1], keepdims: 1 });
    const inverse = g.op1('Div', [this.c.float(1), g.op1('Sqrt', [g.op1('Add', [meanSquare, this.c.float(eps)])])]);
    // rms-offset (Gemma): the weight is stored as w and applied as 1 + w, which its loader adds (hf/families.ts).
    return g.op1('Mul', [g.op1('Mul', [x, inverse]), weight]);
  }
}
