/**
 * Rows of a key/value cache moved between batches: the batched sampler keeps one cache
 * per cohort of sequences it generates together, and rebuilds it when a sequence leaves
 * (at its stop) or a cohort splits. Rows are only ever stacked with rows of the same
 * length — never padded — because padding changes how a pass rounds (batch-sampler.ts).
 */
import * as ort from 'onnxruntime-node';
import { ProbeError } from '../../errors.ts';
import type { KvCache } from './graph.ts';

/** One row to copy: row `row` of `cache`. */
export interface RowSource {
  cache: KvCache;
  row: number;
}

type CacheData = Float32Array | Uint16Array;

/** A cache whose row b is `sources[b]`'s row; every source has the same length. Tensors are [batch, heads, time, head_dim]. */
export function stackRows(sources: RowSource[]): KvCache {
  if (sources.length === 0) throw new ProbeError('a cache needs at least one row');
  const length = sources[0]!.cache.length;
  if (sources.some((s) => s.cache.length !== length)) throw new ProbeError('cache rows of different lengths cannot be stacked');
  const tensors: Record<string, ort.Tensor> = {};
  for (const name of Object.keys(sources[0]!.cache.tensors)) {
    const first = sources[0]!.cache.tensors[name]!;
    const rowSize = first.dims.slice(1).reduce((a, b) => a * b, 1);
    const data = first.data as CacheData;
    const out = new (data.constructor as { new (n: number): CacheData })(sources.length * rowSize);
    sources.forEach((source, b) => {
      const from = source.cache.tensors[name]!.data as CacheData;
      out.set(from.subarray(source.row * rowSize, (source.row + 1) * rowSize), b * rowSize);
    });
    tensors[name] = new ort.Tensor(first.type as 'float32', out as Float32Array, [sources.length, ...first.dims.slice(1)]);
  }
  return { tensors, length };
}

/** Bytes one token takes in a cache (every layer's key and value), for sizing batches. */
export function bytesPerCachedToken(cache: KvCache): number {
  let bytes = 0;
  for (const tensor of Object.values(cache.tensors)) {
    const [, heads, , headDim] = tensor.dims as number[];
    bytes += heads! * headDim! * (tensor.type === 'float16' ? 2 : 4);
  }
  return bytes;
}

/** The first `length` positions of a one-row cache: the keys and values of a prompt's first tokens (causal: nothing later changes them). */
export function headOf(cache: KvCache, length: number): KvCache {
  if (length > cache.length) throw new ProbeError(`a cache of ${cache.length} tokens has no first ${length}`);
  if (length === cache.length) return cache;
  const tensors: Record<string, ort.Tensor> = {};
  for (const [name, tensor] of Object.entries(cache.tensors)) {
    const [batch, heads, time, headDim] = tensor.dims as number[];
    if (batch !== 1) throw new ProbeError('only a one-row cache is cut');
    const from = tensor.data as CacheData;
    const out = new (from.constructor as { new (n: number): CacheData })(heads! * length * headDim!);
    for (let h = 0; h < heads!; h++) out.set(from.subarray(h * time! * headDim!, (h * time! + length) * headDim!), h * length * headDim!);
    tensors[name] = new ort.Tensor(tensor.type as 'float32', out as Float32Array, [1, heads!, length, headDim!]);
  }
  return { tensors, length };
}
