/**
 * Rotary position embeddings as Hugging Face transformers computes them
 * (modeling_rope_utils.py): the inverse frequencies of each RoPE type a config can name,
 * and the factor cos and sin are scaled by. Read from `rope_parameters` (transformers 5)
 * or `rope_scaling` + `rope_theta` (transformers 4); a type probe does not build is
 * refused by name, never run as another.
 */
import { InputError } from '../../errors.ts';

export interface RopeSettings {
  type: string;
  theta: number;
  /** Fraction of head_dim that rotates (partial_rotary_factor, GPT-NeoX's rotary_pct). */
  partial: number;
  params: Record<string, unknown>;
}

/** The RoPE types built here; `dynamic` equals `default` within max_position_embeddings, the window probe keeps. */
export const ROPE_TYPES = ['default', 'linear', 'dynamic', 'llama3', 'yarn'] as const;

export interface Rotary {
  dims: number;
  invFreq: Float32Array;
  attentionFactor: number;
}

/**
 * The rotary part of a head: `dims` leading dimensions, their inverse frequencies and the
 * attention factor. `file` names config.json in errors.
 */
export function rotaryOf(rope: RopeSettings, headDim: number, maxPositions: number, file: string): Rotary {
  if (!(rope.theta > 0) || !Number.isFinite(rope.theta))
    throw new InputError({ file, field: 'rope_parameters.rope_theta' }, `must be a positive number (got ${JSON.stringify(rope.theta)})`);
  if (!(rope.partial > 0 && rope.partial <= 1))
    throw new InputError({ file, field: 'partial_rotary_factor' }, `must be in (0, 1] (got ${JSON.stringify(rope.partial)})`);
  const dims = Math.trunc(headDim * rope.partial);
  if (dims < 2 || dims % 2 !== 0)
    throw new InputError(
      { file, field: 'partial_rotary_factor' },
      `${rope.partial} of head_dim ${headDim} is ${dims} rotary dims (need an even number ≥ 2)`,
    );
  const half = dims / 2;
  const { params } = rope;
  const number = (key: string, fallback?: number): number => {
    const value = params[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      throw new InputError(
        { file, field: `rope_parameters.${key}` },
        `rope type ${rope.type} needs a positive number here (got ${JSON.stringify(value)})`,
      );
    return value;
  };
  const base = ropeBases(rope.theta, dims);
  const invFreq = new Float32Array(half);
  let attentionFactor = 1;
  switch (rope.type) {
    case 'default':
    case 'dynamic': // NTK scaling starts only past max_position_embeddings, which is the window probe keeps
      invFreq.set(defaultInvFreq(rope.theta, dims));
      break;
    case 'linear': {
      const factor = number('factor');
      for (let i = 0; i < half; i++) invFreq[i] = Math.fround(1 / base[i]!) / factor;
      break;
    }
    case 'llama3': {
      const factor = number('factor');
      const low = number('low_freq_factor');
      const high = number('high_freq_factor');
      const old = number('original_max_position_embeddings');
      const lowWavelen = old / low;
      const highWavelen = old / high;
      for (let i = 0; i < half; i++) {
        const f = Math.fround(1 / base[i]!);
        const wavelen = (2 * Math.PI) / f;
        if (wavelen < highWavelen) invFreq[i] = f;
        else if (wavelen > lowWavelen) invFreq[i] = f / factor;
        else {
          const smooth = (old / wavelen - low) / (high - low);
          invFreq[i] = (1 - smooth) * (f / factor) + smooth * f;
        }
      }
      break;
    }
    case 'yarn': {
      const original = number('original_max_position_embeddings');
      const factor = params.factor === undefined || params.factor === null ? maxPositions / original : number('factor');
      const mscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
      const m = params.mscale as number | undefined;
      const mAll = params.mscale_all_dim as number | undefined;
      attentionFactor =
        params.attention_factor !== undefined && params.attention_factor !== null
          ? number('attention_factor')
          : m && mAll
            ? mscale(factor, m) / mscale(factor, mAll)
            : mscale(factor);
      const betaFast = (params.beta_fast as number | undefined) || 32;
      const betaSlow = (params.beta_slow as number | undefined) || 1;
      const truncate = params.truncate ?? true;
      const correction = (rotations: number) => (dims * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(rope.theta));
      let lowDim = correction(betaFast);
      let highDim = correction(betaSlow);
      if (truncate) {
        lowDim = Math.floor(lowDim);
        highDim = Math.ceil(highDim);
      }
      lowDim = Math.max(lowDim, 0);
      highDim = Math.min(highDim, dims - 1);
      if (lowDim === highDim) highDim += 0.001;
      for (let i = 0; i < half; i++) {
        const ramp = Math.min(1, Math.max(0, Math.fround((i - lowDim) / (highDim - lowDim))));
        const extrapolation = 1 - ramp;
        const posFreq = Math.fround(base[i]!);
        invFreq[i] = Math.fround(1 / (factor * posFreq)) * (1 - extrapolation) + Math.fround(1 / posFreq) * extrapolation;
      }
      break;
    }
    default:
      throw new InputError(
        { file, field: 'rope_parameters.rope_type' },
        `RoPE type "${rope.type}" is not built in process (probe builds ${ROPE_TYPES.join(', ')}); serve this checkpoint (a server URL, or --engine vllm)`,
      );
  }
  return { dims, invFreq, attentionFactor };
}

/** torch's `base ** (arange(0, dim, 2) / dim)`, the exponent in float32: θ^(2i/d) for each rotary pair. */
function ropeBases(theta: number, dims: number): Float64Array {
  return Float64Array.from({ length: dims / 2 }, (_, i) => theta ** Math.fround(Math.fround(2 * i) / dims));
}

/** The default RoPE's inverse frequencies 1 / θ^(2i/d), rounded to float32 as torch holds them. */
export function defaultInvFreq(theta: number, dims: number): Float32Array {
  return Float32Array.from(ropeBases(theta, dims), (base) => 1 / base);
}
