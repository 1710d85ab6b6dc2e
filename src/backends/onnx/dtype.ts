/**
 * Which graph file of a checkpoint directory to run: transformers.js's dtype names and
 * the file suffixes onnx-community / Optimum exports use for them (`onnx/model.onnx` is
 * fp32, `onnx/model_fp16.onnx` fp16, …). A directory often holds several; `--dtype` picks
 * one, and asking for one that is not there names those that are.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../errors.ts';

/** transformers.js's DEFAULT_DTYPE_SUFFIX_MAPPING: q8 is `model_quantized.onnx` (onnxruntime's quantize_dynamic). */
export const DTYPE_SUFFIX = {
  fp32: '',
  fp16: '_fp16',
  q8: '_quantized',
  int8: '_int8',
  uint8: '_uint8',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
} as const;
export type Dtype = keyof typeof DTYPE_SUFFIX;
export const DTYPES = Object.keys(DTYPE_SUFFIX) as Dtype[];
export const DEFAULT_DTYPE: Dtype = 'fp32';

export function isDtype(name: string): name is Dtype {
  return Object.hasOwn(DTYPE_SUFFIX, name);
}

/** The graph file of `dtype`, relative to the checkpoint directory. */
export function modelFileOf(dtype: Dtype): string {
  return join('onnx', `model${DTYPE_SUFFIX[dtype]}.onnx`);
}

/** The dtypes whose graph file `dir` holds. */
export function dtypesIn(dir: string): Dtype[] {
  const onnxDir = join(dir, 'onnx');
  const names = existsSync(onnxDir) ? new Set(readdirSync(onnxDir)) : new Set<string>();
  return DTYPES.filter((d) => names.has(`model${DTYPE_SUFFIX[d]}.onnx`));
}

/** The path of `dtype`'s graph in `dir`; a missing one is an InputError that lists what the directory has. */
export function modelPathOf(dir: string, dtype: Dtype): string {
  const path = join(dir, modelFileOf(dtype));
  if (existsSync(path)) return path;
  const present = dtypesIn(dir);
  const has = present.length
    ? `it has ${present.map((d) => `${d} (${modelFileOf(d)})`).join(', ')}`
    : 'it has no onnx/model*.onnx graph at all';
  throw new InputError(
    { file: path, ...(dtype === DEFAULT_DTYPE ? {} : { field: '--dtype' }) },
    `file is missing (the ${dtype} graph of the checkpoint); ${has}${present.length ? ': choose one with --dtype' : ''}`,
  );
}
