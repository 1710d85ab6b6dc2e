/**
 * The decoder families probe runs from a Hugging Face directory, each a short description
 * of how it differs from Llama: the names of its tensors, its norms and block layout, its
 * projections (separate or fused), which config.json fields add biases, windows or caps.
 * `modelOf` turns config.json and the safetensors listing into the `TransformerModel` the
 * graph builders read (transformer/model.ts).
 *
 * Every config.json field either changes nothing (ids, dropout, generation defaults:
 * NEUTRAL_FIELDS), is read by the family (`reads`), or is refused by name when set — a
 * field probe does not implement never yields a silently different number.
 */
import { InputError } from '../../errors.ts';
import type {
  Activation,
  BlockLayout,
  Linear,
  LayerWeights,
  MlpProjection,
  Norm,
  NormKind,
  QkNorm,
  QkvProjection,
  TransformerModel,
  Weight,
} from '../transformer/model.ts';
import { type RopeSettings, rotaryOf } from './rope.ts';
import { readFloat32, type SafetensorsCheckpoint, type TensorEntry } from './safetensors.ts';

type Config = Record<string, unknown>;

interface Family {
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

/** The families table of docs/checkpoints.md: model_type and name. */
export function familyNames(): Array<{ modelType: string; label: string }> {
  return FAMILIES.map(({ modelType, label }) => ({ modelType, label }));
}

/** Fields every family reads. */
const SHARED_FIELDS = [
  'model_type',
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'max_position_embeddings',
  'tie_word_embeddings',
  'rope_parameters',
  'rope_scaling',
  'rope_theta',
  'partial_rotary_factor',
  'layer_types',
  'hidden_act',
  'rms_norm_eps',
];

/**
 * Fields that do not change a forward pass: ids, dropout (inference runs none),
 * initialisation, the dtype weights were saved in (probe widens them to float32),
 * generation defaults and bookkeeping — transformers 4's and 5's PretrainedConfig fields,
 * the cache class generation uses, remote-code class names (`auto_map`: probe runs no
 * checkpoint code), and probe's own `probe_ladder` block. Window fields are neutral to a
 * family that does not read them (transformers' Llama ignores a `sliding_window`).
 */
const NEUTRAL_FIELDS = new Set([
  '_name_or_path',
  'architectures',
  'transformers_version',
  'dtype',
  'torch_dtype',
  'use_bfloat16',
  'return_dict',
  'output_hidden_states',
  'output_attentions',
  'torchscript',
  'tf_legacy_loss',
  'pruned_heads',
  'chunk_size_feed_forward',
  'is_encoder_decoder',
  'is_decoder',
  'cross_attention_hidden_size',
  'add_cross_attention',
  'tie_encoder_decoder',
  'max_length',
  'min_length',
  'do_sample',
  'early_stopping',
  'num_beams',
  'num_beam_groups',
  'diversity_penalty',
  'temperature',
  'top_k',
  'top_p',
  'typical_p',
  'repetition_penalty',
  'length_penalty',
  'no_repeat_ngram_size',
  'encoder_no_repeat_ngram_size',
  'bad_words_ids',
  'num_return_sequences',
  'output_scores',
  'return_dict_in_generate',
  'forced_bos_token_id',
  'forced_eos_token_id',
  'remove_invalid_values',
  'exponential_decay_length_penalty',
  'suppress_tokens',
  'begin_suppress_tokens',
  'finetuning_task',
  'id2label',
  'label2id',
  'tokenizer_class',
  'prefix',
  'bos_token_id',
  'pad_token_id',
  'eos_token_id',
  'sep_token_id',
  'decoder_start_token_id',
  'task_specific_params',
  'problem_type',
  'use_cache',
  'initializer_range',
  'attention_dropout',
  'hidden_dropout',
  'classifier_dropout',
  'embd_pdrop',
  'resid_pdrop',
  'attn_pdrop',
  'pretraining_tp',
  'probe_ladder',
  '_attn_implementation_autoset',
  'attn_implementation',
  'max_window_layers',
  'use_sliding_window',
  'sliding_window',
  'original_max_position_embeddings',
  'cache_implementation',
  'auto_map',
]);

/** Reads config.json's fields, each refusal naming the file and the field. */
export class FieldReader {
  constructor(
    private readonly config: Config,
    readonly file: string,
  ) {}

  refuse(field: string, why: string): InputError {
    return new InputError(
      { file: this.file, field },
      `${why}; probe runs this checkpoint's family in process without it — serve it instead (a server URL, or --engine vllm)`,
    );
  }

  /** A positive finite number: every quantity the families read (ε, caps, scalars, sizes) is one, and 0 or less would make NaNs. */
  number(field: string, fallback?: number): number {
    const value = this.config[field] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      throw new InputError({ file: this.file, field }, `must be a positive number (got ${JSON.stringify(value)})`);
    return value;
  }

  optionalNumber(field: string): number | undefined {
    return this.config[field] === undefined || this.config[field] === null ? undefined : this.number(field);
  }

  integer(field: string, fallback?: number): number {
    const value = this.number(field, fallback);
    if (!Number.isInteger(value) || value <= 0)
      throw new InputError({ file: this.file, field }, `must be a positive integer (got ${value})`);
    return value;
  }
}

function numberOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

const ACTIVATIONS: Record<string, Activation> = {
  silu: 'silu',
  swish: 'silu',
  gelu: 'gelu',
  gelu_new: 'gelu-tanh',
  gelu_pytorch_tanh: 'gelu-tanh',
};

/** The family a config.json names, or an InputError listing those probe builds. */
export function familyOf(config: Config, file: string): Family {
  const family = FAMILIES.find((f) => f.modelType === config.model_type);
  if (family) return family;
  throw new InputError(
    { file, field: 'model_type' },
    `${JSON.stringify(config.model_type)} is not a family probe runs in process (${FAMILIES.map((f) => f.modelType).join(', ')}); serve it instead (a server URL, or --engine vllm)`,
  );
}

/** The model a Hugging Face directory holds: its config read by its family, its weights found in the safetensors listing. */
export function modelOf(config: Config, configFile: string, weights: SafetensorsCheckpoint): TransformerModel {
  const family = familyOf(config, configFile);
  const read = new FieldReader(config, configFile);
  for (const [field, value] of Object.entries(config)) {
    if (
      SHARED_FIELDS.includes(field) ||
      family.reads.includes(field) ||
      NEUTRAL_FIELDS.has(field) ||
      family.eps === field ||
      family.activation === field
    )
      continue;
    if (value === null || value === false || value === undefined) continue;
    throw read.refuse(field, `a ${family.label} config field probe does not implement (${JSON.stringify(value).slice(0, 80)})`);
  }
  const hidden = read.integer('hidden_size');
  const heads = read.integer('num_attention_heads');
  const kvHeads = read.integer('num_key_value_heads', heads);
  const layers = read.integer('num_hidden_layers');
  const vocab = read.integer('vocab_size');
  const headDim = family.modelType === 'gpt_neox' ? hidden / heads : read.integer('head_dim', hidden / heads);
  if (!Number.isInteger(headDim) || heads % kvHeads !== 0)
    throw new InputError(
      { file: configFile, field: 'num_key_value_heads' },
      `heads ${heads}, kv heads ${kvHeads} and head_dim ${headDim} do not divide`,
    );
  const activationName = config[family.activation] ?? 'silu';
  const activation = ACTIVATIONS[String(activationName)];
  if (!activation)
    throw read.refuse(
      family.activation,
      `activation ${JSON.stringify(activationName)} is not built (probe builds ${Object.keys(ACTIVATIONS).join(', ')})`,
    );
  const maxPositions = read.integer('max_position_embeddings', 2048);
  const rotary = rotaryOf(ropeSettings(config), headDim, maxPositions, configFile);
  const extras = family.extras?.(config, hidden, read) ?? {};
  const block = typeof family.block === 'function' ? family.block(config) : family.block;
  const windows = windowsOf(config, family, layers, read);
  if (windows.some((w) => w !== undefined && (!Number.isInteger(w) || w <= 0)))
    throw new InputError(
      { file: configFile, field: 'sliding_window' },
      `must be a positive integer (got ${JSON.stringify(config.sliding_window)})`,
    );

  const tied = config.tie_word_embeddings !== false && (family.head.length === 0 || config.tie_word_embeddings === true);
  const find = new TensorFinder(weights);
  const linear = (name: string, dims: [number, number], bias: boolean, role: string): Linear => ({
    weight: find.linear(name, dims, role),
    ...(bias ? { bias: find.vector(name.replace(/\.weight$/, '.bias'), dims[0], `${role} bias`) } : {}),
  });
  const norm = (name: string, width: number, role: string): Norm => ({
    weight: find.vector(`${name}.weight`, width, `${role} weight`, family.norm === 'rms-offset' ? 1 : 0),
    ...(family.norm === 'layer' ? { bias: find.vector(`${name}.bias`, width, `${role} bias`) } : {}),
  });
  const biases = family.biases(config);
  const q = heads * headDim;
  const kv = kvHeads * headDim;
  const intermediate = read.integer('intermediate_size');

  const layerWeights: LayerWeights[] = Array.from({ length: layers }, (_, l) => {
    const at = (name: string) => `${family.layer(l)}.${name}.weight`;
    const role = (what: string) => `layer ${l} ${what}`;
    const qkv: QkvProjection =
      family.qkv.kind === 'separate'
        ? {
            kind: 'separate',
            q: linear(at(family.qkv.q), [q, hidden], biases.qkv, role('q projection')),
            k: linear(at(family.qkv.k), [kv, hidden], biases.qkv, role('k projection')),
            v: linear(at(family.qkv.v), [kv, hidden], biases.qkv, role('v projection')),
          }
        : { kind: family.qkv.kind, qkv: linear(at(family.qkv.qkv), [q + 2 * kv, hidden], biases.qkv, role('fused qkv projection')) };
    const m = family.mlp;
    const mlp: MlpProjection =
      m.kind === 'gated'
        ? {
            kind: 'gated',
            gate: linear(at(m.gate), [intermediate, hidden], biases.mlp, role('gate projection')),
            up: linear(at(m.up), [intermediate, hidden], biases.mlp, role('up projection')),
          }
        : m.kind === 'fused-gate-up'
          ? {
              kind: 'fused-gate-up',
              gateUp: linear(at(m.gateUp), [2 * intermediate, hidden], biases.mlp, role('fused gate/up projection')),
            }
          : { kind: 'plain', up: linear(at(m.up), [intermediate, hidden], biases.mlp, role('MLP input projection')) };
    const qkNormWidth = family.qkNorm === 'head' ? [headDim, headDim] : [q, kv];
    return {
      norms: family.norms.map((name) => norm(`${family.layer(l)}.${name}`, hidden, role(name))),
      qkv,
      ...(family.qkNorm === 'none'
        ? {}
        : {
            qNorm: norm(`${family.layer(l)}.self_attn.q_norm`, qkNormWidth[0]!, role('q norm')),
            kNorm: norm(`${family.layer(l)}.self_attn.k_norm`, qkNormWidth[1]!, role('k norm')),
          }),
      o: linear(at(family.o), [hidden, q], biases.o, role('output projection')),
      mlp,
      down: linear(at(family.down), [hidden, intermediate], biases.mlp, role('down projection')),
    };
  });
  const embedName = `${family.embed}.weight`;
  const headName = family.head.map((name) => `${name}.weight`).find((name) => weights.has(name)) ?? `${family.head[0] ?? 'lm_head'}.weight`;
  return {
    spec: {
      family: family.label,
      hidden,
      heads,
      kvHeads,
      headDim,
      vocab,
      layers,
      norm: { kind: family.norm, eps: read.number(family.eps, family.norm === 'layer' ? 1e-5 : 1e-6) },
      block,
      qkNorm: family.qkNorm,
      rotary,
      attention: { scale: extras.scale ?? headDim ** -0.5, ...(extras.softcap === undefined ? {} : { softcap: extras.softcap }), windows },
      mlp: { gated: family.mlp.kind !== 'plain', activation },
      ...(extras.embedScale === undefined ? {} : { embedScale: extras.embedScale }),
      ...(extras.finalSoftcap === undefined ? {} : { finalSoftcap: extras.finalSoftcap }),
    },
    weights: {
      embed: find.matrix(embedName, [vocab, hidden], 'token embedding'),
      layers: layerWeights,
      finalNorm: norm(family.finalNorm, hidden, 'final norm'),
      // Tied: the head is the embedding read as [hidden, vocab]; untied: its own [vocab, hidden] matrix, transposed.
      head: tied
        ? find.linear(embedName, [vocab, hidden], 'LM head (tied to the embedding)')
        : find.linear(headName, [vocab, hidden], 'LM head'),
    },
  };
}

/** RoPE's settings from transformers 5's rope_parameters, else transformers 4's rope_theta and rope_scaling (GPT-NeoX: rotary_pct, rotary_emb_base). */
function ropeSettings(config: Config): RopeSettings {
  const v5 = config.rope_parameters;
  const v4 = config.rope_scaling;
  const params = (v5 && typeof v5 === 'object' ? v5 : v4 && typeof v4 === 'object' ? v4 : {}) as Record<string, unknown>;
  const type = String(params.rope_type ?? params.type ?? 'default');
  const theta = (params.rope_theta ?? config.rope_theta ?? config.rotary_emb_base ?? 10000) as number;
  const partial = (params.partial_rotary_factor ?? config.partial_rotary_factor ?? config.rotary_pct ?? 1) as number;
  return { type, theta, partial, params: { original_max_position_embeddings: config.original_max_position_embeddings, ...params } };
}

/** Each layer's sliding window: transformers 5's layer_types with sliding_window, else the family's transformers 4 rule. */
function windowsOf(config: Config, family: Family, layers: number, read: FieldReader): Array<number | undefined> {
  const types = config.layer_types;
  if (types === undefined || types === null) return family.windows(config, layers);
  if (!Array.isArray(types) || types.length !== layers)
    throw new InputError({ file: read.file, field: 'layer_types' }, `must list one type per layer (${layers})`);
  return types.map((type, l) => {
    if (type === 'full_attention') return undefined;
    if (type === 'sliding_attention') {
      const window = read.optionalNumber('sliding_window');
      if (window === undefined)
        throw new InputError({ file: read.file, field: 'sliding_window' }, `layer ${l} is sliding_attention but no window is set`);
      return window;
    }
    throw read.refuse(`layer_types.${l}`, `attention type ${JSON.stringify(type)} is not built`);
  });
}

/** Finds tensors in the listing and checks their shapes, naming the file and tensor when one is missing or misshapen. */
class TensorFinder {
  /** Where a stored matrix is read before it is transposed into place: one buffer, grown to the largest, for every matrix. */
  private scratch = new Float32Array(0);

  constructor(private readonly weights: SafetensorsCheckpoint) {}

  private stored(entry: TensorEntry, count: number): Float32Array {
    if (this.scratch.length < count) this.scratch = new Float32Array(count);
    return readFloat32(entry, this.scratch.subarray(0, count));
  }

  private entry(name: string, dims: number[], role: string): TensorEntry {
    const entry = this.weights.tensor(name, role);
    if (entry.shape.join() !== dims.join())
      throw new InputError(
        { file: entry.file, field: name },
        `the ${role} is [${entry.shape.join(', ')}], where config.json makes it [${dims.join(', ')}]`,
      );
    return entry;
  }

  /** A stored [out, in] matrix as the graph's [in, out]. */
  linear(name: string, [out, input]: [number, number], role: string): Weight {
    const entry = this.entry(name, [out, input], role);
    return {
      dims: [input, out],
      load: (into) => {
        const stored = this.stored(entry, out * input);
        for (let r = 0; r < out; r++) for (let c = 0; c < input; c++) into[c * out + r] = stored[r * input + c]!;
      },
    };
  }

  /** A matrix used as stored (the embedding, gathered by row). */
  matrix(name: string, dims: [number, number], role: string): Weight {
    const entry = this.entry(name, dims, role);
    return { dims, load: (into) => void readFloat32(entry, into) };
  }

  /** A vector, plus `offset` (Gemma's norms apply 1 + w: added once here, in float32 as transformers adds it). */
  vector(name: string, width: number, role: string, offset = 0): Weight {
    const entry = this.entry(name, [width], role);
    return {
      dims: [width],
      load(into) {
        readFloat32(entry, into);
        if (offset !== 0) for (let i = 0; i < width; i++) into[i] = Math.fround(into[i]! + offset);
      },
    };
  }
}
