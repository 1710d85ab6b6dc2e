/**
 * Reads a Hugging Face checkpoint directory — `config.json`, `model.safetensors` (or the
 * shards `model.safetensors.index.json` names), `tokenizer.json` — as the ONNX backend
 * runs it: the same `CheckpointFiles` an export gives, whose graph is built in process
 * from config.json and the safetensors (families.ts → transformer/forward-graph.ts)
 * instead of read from `onnx/model.onnx`. Everything is checked here, before any weight is
 * read: the family and every config field, each tensor's presence, shape and byte range.
 */
import { join } from 'node:path';
import { InputError } from '../../errors.ts';
import type { CheckpointFiles } from '../checkpoint-dir.ts';
import { DEFAULT_DTYPE, type Dtype } from '../onnx/dtype.ts';
import { modelOf } from './model-of.ts';
import { INDEX_FILE, readSafetensors, SINGLE_FILE } from './safetensors.ts';

/** What an HF directory adds to the files every checkpoint directory has (config.json, the tokenizer). */
export function readHfWeights(
  files: Omit<CheckpointFiles, 'graph' | 'modelPath' | 'dtype'>,
  dtype: Dtype,
): Pick<CheckpointFiles, 'graph' | 'modelPath' | 'dtype'> {
  if (dtype !== DEFAULT_DTYPE)
    throw new InputError(
      { file: files.dir, field: '--dtype' },
      `a Hugging Face directory runs in fp32 (its ${dtype === 'fp16' ? 'fp16 or bf16 ' : ''}weights are widened once when the graph is built); --dtype picks among an ONNX export's graphs`,
    );
  const weights = readSafetensors(files.dir);
  const model = modelOf(files.config as Record<string, unknown>, join(files.dir, 'config.json'), weights);
  const modelPath = join(files.dir, weights.files.length === 1 && weights.files[0]!.endsWith(SINGLE_FILE) ? SINGLE_FILE : INDEX_FILE);
  return { graph: { kind: 'built', model }, modelPath, dtype };
}
