/**
 * A decoder-only transformer as probe's graph builders see it (layers.ts): its shape and
 * arithmetic choices (`TransformerSpec`) and where each weight comes from
 * (`TransformerWeights`). The readers fill it in — a Hugging Face directory from its
 * config.json and safetensors (hf/families.ts), a Llama ONNX export from its graph
 * (onnx/llama-export.ts) — and every graph probe runs is built from it: the forward graph
 * of a Hugging Face directory (forward-graph.ts) and the shared-prefix decode graph of any
 * checkpoint (decode-graph.ts). One description, so a family is its few differences.
 */

/**
 * The graph builders' arithmetic, as a version: part of the result cache's key for a Hugging
 * Face directory (whose graph is built here, not read from its files). Raise it with any
 * change that can move a logit.
 */
export const GRAPH_BUILDER_VERSION = 1;

/** How a norm normalises: RMSNorm × w (Llama), RMSNorm × (1 + w) (Gemma), LayerNorm with bias (GPT-NeoX). */
export type NormKind = 'rms' | 'rms-offset' | 'layer';

/**
 * Where a block's norms sit and how its residual runs:
 * - `pre`: x + attn(norm₁ x), then x + mlp(norm₂ x) (Llama and most);
 * - `post`: x + norm₁(attn x), then x + norm₂(mlp x) (OLMo 2);
 * - `sandwich`: x + norm₂(attn(norm₁ x)), then x + norm₄(mlp(norm₃ x)) (Gemma 2);
 * - `parallel`: x + attn(norm₁ x) + mlp(norm₂ x) (GPT-NeoX's use_parallel_residual).
 */
export type BlockLayout = 'pre' | 'post' | 'sandwich' | 'parallel';

/** Normalisation of queries and keys before RoPE: none, per head over head_dim (Qwen3), over the whole projection (OLMo 2). */
export type QkNorm = 'none' | 'head' | 'projection';

/** silu (SwiGLU), gelu (erf, exact), gelu-tanh (the tanh approximation: gelu_new, gelu_pytorch_tanh). */
export type Activation = 'silu' | 'gelu' | 'gelu-tanh';

export interface TransformerSpec {
  /** What the checkpoint calls its architecture (model_type), for messages. */
  family: string;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  layers: number;
  norm: { kind: NormKind; eps: number };
  block: BlockLayout;
  qkNorm: QkNorm;
  rotary: {
    /** Leading dimensions of each head that rotate (head_dim × partial_rotary_factor / rotary_pct); the rest pass through. */
    dims: number;
    /** Inverse frequencies, rotary dims / 2 of them, as float32 (rope.ts). */
    invFreq: Float32Array;
    /** What cos and sin are multiplied by (YaRN's attention factor; 1 otherwise). */
    attentionFactor: number;
  };
  attention: {
    /** Scores are q·k × scale (1/√head_dim, or Gemma 2's query_pre_attn_scalar^-½). */
    scale: number;
    /** Gemma 2: scores = cap · tanh(scores / cap) before the mask. */
    softcap?: number;
    /** Per layer: a query attends to keys fewer than this many positions back (sliding window), or to all earlier keys. */
    windows: ReadonlyArray<number | undefined>;
  };
  /** The MLP's activation (whether it is gated is in its weights: MlpProjection). */
  mlp: { activation: Activation };
  /** Gemma 2: embeddings × √hidden. */
  embedScale?: number;
  /** Gemma 2: logits = cap · tanh(logits / cap). */
  finalSoftcap?: number;
}

/**
 * A weight as the graph uses it: float32, linear layers as [in, out] (a product x·W), filled
 * in only when a graph is built (`load` writes its values into a slice of the graph's one
 * weight buffer), so nothing is read, widened or transposed before it is needed, and
 * nothing twice for one graph.
 */
export interface Weight {
  dims: number[];
  load(into: Float32Array): void;
}

export interface Linear {
  weight: Weight;
  bias?: Weight;
}

export interface Norm {
  weight: Weight;
  bias?: Weight;
}

/** Queries, keys and values: three projections, or one whose output is split (per head: GPT-NeoX; in blocks q|k|v: Phi-3). */
export type QkvProjection =
  | { kind: 'separate'; q: Linear; k: Linear; v: Linear }
  | { kind: 'fused-per-head'; qkv: Linear }
  | { kind: 'fused-blocks'; qkv: Linear };

/** The MLP's input projections: gate and up (gated), one fused gate|up (Phi-3), or a single up (GPT-NeoX). */
export type MlpProjection =
  | { kind: 'gated'; gate: Linear; up: Linear }
  | { kind: 'fused-gate-up'; gateUp: Linear }
  | { kind: 'plain'; up: Linear };

export interface LayerWeights {
  /** The norms of the block's layout (BlockLayout), in the order named there. */
  norms: Norm[];
  qkv: QkvProjection;
  qNorm?: Norm;
  kNorm?: Norm;
  o: Linear;
  mlp: MlpProjection;
  down: Linear;
}

export interface TransformerWeights {
  /** [vocab, hidden]. */
  embed: Weight;
  layers: LayerWeights[];
  finalNorm: Norm;
  /** [hidden, vocab]. */
  head: Weight;
}

export interface TransformerModel {
  spec: TransformerSpec;
  weights: TransformerWeights;
}

/** A weight already in memory as float32 little-endian bytes (an ONNX export's initializer). */
export function weightOfBytes(dims: number[], bytes: Uint8Array): Weight {
  return {
    dims,
    load(into) {
      into.set(new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)));
    },
  };
}
