/**
 * Which `--ckpt` arguments are checkpoints an inference engine serves for the run (design.md,
 * "Checkpoints"): a GGUF file (llama.cpp's llama-server) or a Hugging Face directory of
 * safetensors without an ONNX export (`vllm serve`). ONNX directories run in process and
 * URLs name servers already running; neither is an engine target.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { regularFile } from '../util/safe-tree.ts';

export type EngineName = 'llamacpp' | 'vllm';

export interface EngineTarget {
  engine: EngineName;
  /** The GGUF file or the checkpoint directory, absolute. */
  path: string;
}

/** What each engine can run: llama.cpp returns no prompt log-probs, so it samples but cannot score (docs/checkpoints.md). */
export const ENGINE_PROBES: Record<EngineName, { scores: boolean; label: string }> = {
  llamacpp: { scores: false, label: "llama.cpp's llama-server" },
  vllm: { scores: true, label: 'vLLM (vllm serve)' },
};

/** Whether an engine serves `spec` (without refusing a missing file: resolving the checkpoint does that). */
export function servedByEngine(spec: string): boolean {
  try {
    return engineTargetOf(spec) !== undefined;
  } catch {
    return false;
  }
}

/** The engine that serves `spec`, or undefined where probe runs it itself (an ONNX directory) or it is a URL. */
export function engineTargetOf(spec: string): EngineTarget | undefined {
  const path = resolve(spec);
  if (/\.gguf$/i.test(spec)) {
    // llama-server opens it itself: a FIFO or a device in its place is refused here, naming it.
    if (regularFile(spec, { maxBytes: Number.POSITIVE_INFINITY, what: 'a GGUF checkpoint' }) === undefined)
      throw new InputError({ file: spec }, 'no such GGUF file');
    return { engine: 'llamacpp', path };
  }
  if (!existsSync(path) || !statSync(path).isDirectory()) return undefined;
  if (!existsSync(join(path, 'config.json')) || existsSync(join(path, 'onnx'))) return undefined;
  const names = readdirSync(path);
  return names.some((n) => n.endsWith('.safetensors') || n === 'model.safetensors.index.json') ? { engine: 'vllm', path } : undefined;
}
