/**
 * The decoder families probe runs from a Hugging Face directory, each a short description
 * of how it differs from Llama: the names of its tensors, its norms and block layout, its
 * projections (separate or fused), which config.json fields add biases, windows or caps,
 * and the fields it reads (config-fields.ts refuses the others). model-of.ts turns a
 * description, config.json and the safetensors listing into the `TransformerModel` the
 * graph builders read (transformer/model.ts).
 */
import { InputError } from '../../errors.ts';
import type { BlockLayout, NormKind, QkNorm, TransformerModel } from '../transformer/model.ts';
import { type Config, type FieldReader, numberOrUndefined } from './config-fields.ts';

export interface Family {
  /** config.json's `model_type`. */
  modelType: string;
  /** What the model is usually called, for the families table and messages. */
  label: string;
  /** Tensor names: everything under one layer is `${layer(l)}.${name}`. */
  embed: string;
  layer: (l: number) => string;
  finalNorm: string;
  /** The untied LM head, first name found wins (GPT-NeoX checkpoints say embed_out, transformers 5 lm_head). */
  head: string[];
  norm: NormKind;
  /** The config field holding the norm's ε. */
  eps: string;
  block: BlockLayout | ((config: Config) => BlockLayout);
  /** The norms of the block, in the layout's order (transformer/model.ts BlockLayout). */
  norms: string[];
  qkNorm: QkNorm;
  qkv: { kind: 'separate'; q: string; k: string; v: string } | { kind: 'fused-per-head' | 'fused-blocks'; qkv: string };
  o: string;
  mlp: { kind: 'gated'; gate: string; up: string } | { kind: 'fused-gate-up'; gateUp: string } | { kind: 'plain'; up: string };
  down: string;
  /** Which projections carry biases. */
  biases: (config: Config) => { qkv: boolean; o: boolean; mlp: boolean };
  /** The config field naming the MLP's activation. */
  activation: string;
  /** Fields this family reads beyond the shared ones (SHARED_FIELDS). */
  reads: string[];
  /** Sliding windows per layer where the config has no layer_types (transformers 4 configs). */
  windows: (config: Config, layers: number) => Array<number | undefined>;
  /** Gemma 2's extras: embedding scale, soft-capping, the query scalar. */
  extras?: (
    config: Config,
    hidden: number,
    read: FieldReader,
  ) => Partial<Pick<TransformerModel['spec'], 'embedScale' | 'finalSoftcap'>> & { scale?: number; softcap?: number };
}

const LLAMA_LAYER = (l: number) => `model.layers.${l}`;
const SEPARATE_QKV = { kind: 'separate', q: 'self_attn.q_proj', k: 'self_attn.k_proj', v: 'self_attn.v_proj' } as const;
const GATED_MLP = { kind: 'gated', gate: 'mlp.gate_proj', up: 'mlp.up_proj' } as const;
const PRE_NORMS = ['input_layernorm', 'post_attention_layernorm'];
const noWindows = (_: Config, layers: number) => new Array<number | undefined>(layers).fill(undefined);
const everyLayer = (config: Config, layers: number) => new Array<number | undefined>(layers).fill(numberOrUndefined(config.sliding_window));
/** Qwen's transformers-4 rule: layers from max_window_layers on slide, where use_sliding_window is set. */
const qwenWindows = (config: Config, layers: number) =>
  Array.from({ length: layers }, (_, l) =>
    config.use_sliding_window === true && l >= (numberOrUndefined(config.max_window_layers) ?? layers)
      ? numberOrUndefined(config.sliding_window)
      : undefined,
  );

const llamaLike = {
  embed: 'model.embed_tokens',
  layer: LLAMA_LAYER,
  finalNorm: 'model.norm',
  head: ['lm_head'],
  norm: 'rms',
  eps: 'rms_norm_eps',
  block: 'pre',
  norms: PRE_NORMS,
  qkNorm: 'none',
  qkv: SEPARATE_QKV,
  o: 'self_attn.o_proj',
  mlp: GATED_MLP,
  down: 'mlp.down_proj',
  activation: 'hidden_act',
  windows: noWindows,
} as const satisfies Partial<Family>;

const attentionBias = (config: Config) => ({ qkv: config.attention_bias === true, o: config.attention_bias === true, mlp: false });

export const FAMILIES: Family[] = [
  {
    ...llamaLike,
    modelType: 'llama',
    label: 'Llama',
    biases: (config) => ({ qkv: config.attention_bias === true, o: config.attention_bias === true, mlp: config.mlp_bias === true }),
    reads: ['attention_bias', 'mlp_bias', 'head_dim'],
  },
  {
    ...llamaLike,
    modelType: 'mistral',
    label: 'Mistral',
    biases: () => ({ qkv: false, o: false, mlp: false }),
    reads: ['sliding_window', 'head_dim'],
    windows: everyLayer,
  },
  {
    ...llamaLike,
    modelType: 'qwen2',
    label: 'Qwen2 / Qwen2.5',
    biases: () => ({ qkv: true, o: false, mlp: false }),
    reads: ['sliding_window', 'use_sliding_window', 'max_window_layers'],
    windows: qwenWindows,
  },
  {
    ...llamaLike,
    modelType: 'qwen3',
    label: 'Qwen3',
    qkNorm: 'head',
    biases: attentionBias,
    reads: ['attention_bias', 'head_dim', 'sliding_window', 'use_sliding_window', 'max_window_layers'],
    windows: qwenWindows,
  },
  {
    ...llamaLike,
    modelType: 'olmo2',
    label: 'OLMo 2',
    block: 'post',
    norms: ['post_attention_layernorm', 'post_feedforward_layernorm'],
    qkNorm: 'projection',
    biases: attentionBias,
    reads: ['attention_bias'],
  },
  {
    ...llamaLike,
    modelType: 'gemma2',
    label: 'Gemma 2',
    norm: 'rms-offset',
    block: 'sandwich',
    norms: ['input_layernorm', 'post_attention_layernorm', 'pre_feedforward_layernorm', 'post_feedforward_layernorm'],
    head: [], // tied to the embedding, always
    activation: 'hidden_activation',
    biases: attentionBias,
    reads: [
      'attention_bias',
      'head_dim',
      'sliding_window',
      'attn_logit_softcapping',
      'final_logit_softcapping',
      'query_pre_attn_scalar',
      'hidden_activation',
      'use_bidirectional_attention',
    ],
    // transformers 4: even layers slide, odd ones see everything.
    windows: (config, layers) =>
      Array.from({ length: layers }, (_, l) => (l % 2 === 0 ? numberOrUndefined(config.sliding_window) : undefined)),
    extras: (config, hidden, read) => {
      if (config.use_bidirectional_attention === true)
        throw read.refuse('use_bidirectional_attention', 'bidirectional attention is not a causal language model');
      const query = read.number('query_pre_attn_scalar');
      return {
        embedScale: Math.sqrt(hidden),
        scale: query ** -0.5,
        ...(read.optionalNumber('attn_logit_softcapping') === undefined ? {} : { softcap: read.number('attn_logit_softcapping') }),
        ...(read.optionalNumber('final_logit_softcapping') === undefined ? {} : { finalSoftcap: read.number('final_logit_softcapping') }),
      };
    },
  },
  {
    ...llamaLike,
    modelType: 'phi3',
    label: 'Phi-3',
    qkv: { kind: 'fused-blocks', qkv: 'self_attn.qkv_proj' },
    mlp: { kind: 'fused-gate-up', gateUp: 'mlp.gate_up_proj' },
    biases: () => ({ qkv: false, o: false, mlp: false }),
    reads: ['sliding_window', 'partial_rotary_factor', 'original_max_position_embeddings'],
    windows: everyLayer,
  },
  {
    modelType: 'gpt_neox',
    label: 'GPT-NeoX / Pythia',
    embed: 'gpt_neox.embed_in',
    layer: (l) => `gpt_neox.layers.${l}`,
    finalNorm: 'gpt_neox.final_layer_norm',
    head: ['embed_out', 'lm_head'],
    norm: 'layer',
    eps: 'layer_norm_eps',
    block: (config) => (config.use_parallel_residual === false ? 'pre' : 'parallel'),
    norms: PRE_NORMS,
    qkNorm: 'none',
    qkv: { kind: 'fused-per-head', qkv: 'attention.query_key_value' },
    o: 'attention.dense',
    mlp: { kind: 'plain', up: 'mlp.dense_h_to_4h' },
    down: 'mlp.dense_4h_to_h',
    activation: 'hidden_act',
    biases: (config) => ({ qkv: config.attention_bias !== false, o: config.attention_bias !== false, mlp: true }),
    reads: ['use_parallel_residual', 'attention_bias', 'rotary_pct', 'rotary_emb_base', 'layer_norm_eps'],
    windows: noWindows,
  },
];

/** The family a config.json names, or an InputError listing those probe builds. */
export function familyOf(config: Config, file: string): Family {
  const family = FAMILIES.find((f) => f.modelType === config.model_type);
  if (family) return family;
  throw new InputError(
    { file, field: 'model_type' },
    `${JSON.stringify(config.model_type)} is not a family probe runs in process (${FAMILIES.map((f) => f.modelType).join(', ')}); serve it instead (a server URL, or --engine vllm)`,
  );
}
