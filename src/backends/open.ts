/** Turns a `--ckpt` argument into a backend (design.md, "Checkpoints"). */
import { InputError } from '../errors.ts';
import { OnnxBackend, type OnnxBackendOptions } from './onnx/backend.ts';
import { readCheckpointDir } from './onnx/checkpoint.ts';
import type { CompletionBackend } from './types.ts';

export function isServerAddress(spec: string): boolean {
  return /^https?:\/\//i.test(spec);
}

/** Checks a checkpoint's files without loading its graph, so bad input is caught before any work. */
export function checkCheckpoint(spec: string): void {
  if (isServerAddress(spec)) {
    throw new InputError({ file: spec }, 'OpenAI-compatible server checkpoints are not supported by this version of probe; pass a checkpoint directory');
  }
  readCheckpointDir(spec);
}

export async function openBackend(spec: string, options: OnnxBackendOptions = {}): Promise<CompletionBackend> {
  checkCheckpoint(spec);
  return OnnxBackend.open(spec, options);
}
