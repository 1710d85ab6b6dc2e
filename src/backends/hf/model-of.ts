/**
 * The model a Hugging Face directory holds (`modelOf`): config.json read by its family's
 * description (families.ts), every field checked (config-fields.ts), RoPE computed
 * (rope.ts), and each weight found in the safetensors listing with the shape config.json
 * implies — as lazy loaders, read, widened and transposed only when a graph is written.
 */
import { InputError } from '../../errors.ts';
import type {
  Activation,
  Linear,
  LayerWeights,
  MlpProjection,
  Norm,
  QkvProjection,
  TransformerModel,
  Weight,
} from '../transformer/model.ts';
import { type Config, FieldReader, refuseUnknownFields } from './config-fields.ts';
import { type Family, familyOf } from './families.ts';
import { type RopeSettings, rotaryOf } from './rope.ts';
import { readFloat32, type SafetensorsCheckpoint, type TensorEntry } from './safetensors.ts';

const ACTIVATIONS: Record<string, Activation> = {
  silu: 'silu',
  swish: 'silu',
  gelu: 'gelu',
  gelu_new: 'gelu-tanh',
  gelu_pytorch_tanh: 'gelu-tanh',
};

/** The model a Hugging Face directory holds: its config read by its family, its weights found in the safetensors listing. */
export function modelOf(config: Config, configFile: string, weights: SafetensorsCheckpoint): TransformerModel {
  const family = familyOf(config, configFile);
  const read = new FieldReader(config, configFile);
  refuseUnknownFields(config, family, read);
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
      mlp: { activation },
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
