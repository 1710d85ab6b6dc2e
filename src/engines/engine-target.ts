/**
 * Which `--ckpt` arguments are checkpoints an inference engine serves for the run (design.md,
 * "Checkpoints"): a GGUF file (llama.cpp's llama-server), and a Hugging Face directory of
 * safetensors where `--engine` chooses vLLM (`vllm serve`). ONNX directories and Hugging
 * Face directories otherwise run in process, and URLs name servers already running; none
 * of these is an engine target.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { regularFile } from '../util/safe-tree.ts';
import { engineProgram } from './find-engine.ts';

export type EngineName = 'llamacpp' | 'vllm';

/**
 * `--engine`: what runs a Hugging Face directory. `in-process`: probe builds its graph and
 * runs it on onnxruntime (hf/); `vllm`: `vllm serve` for the run; `auto` (default): vLLM
 * where it is installed and the machine has an NVIDIA GPU (the case it is for: large
 * models), else in process.
 */
export const ENGINE_CHOICES = ['auto', 'in-process', 'vllm'] as const;
export type EngineChoice = (typeof ENGINE_CHOICES)[number];
export const DEFAULT_ENGINE: EngineChoice = 'auto';

/** Whether `auto` picks vLLM here: it is installed (PROBE_VLLM or PATH) and an NVIDIA device is present. */
function vllmServesHere(): boolean {
  return engineProgram('vllm') !== undefined && existsSync('/dev/nvidiactl');
}

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
export function servedByEngine(spec: string, choice: EngineChoice = DEFAULT_ENGINE): boolean {
  try {
    return engineTargetOf(spec, choice) !== undefined;
  } catch {
    return false;
  }
}

/** The engine that serves `spec`, or undefined where probe runs it itself (an ONNX or Hugging Face directory) or it is a URL. */
export function engineTargetOf(spec: string, choice: EngineChoice = DEFAULT_ENGINE): EngineTarget | undefined {
  const path = resolve(spec);
  if (/\.gguf$/i.test(spec)) {
    // llama-server opens it itself: a FIFO or a device in its place is refused here, naming it.
    if (regularFile(spec, { maxBytes: Number.POSITIVE_INFINITY, what: 'a GGUF checkpoint' }) === undefined)
      throw new InputError({ file: spec }, 'no such GGUF file');
    if (choice === 'vllm') throw new InputError({ file: spec, field: '--engine' }, 'a GGUF file is served by llama.cpp, not vLLM');
    return { engine: 'llamacpp', path };
  }
  if (!existsSync(path) || !statSync(path).isDirectory()) return undefined;
  const onnx = existsSync(join(path, 'onnx'));
  const safetensors =
    existsSync(join(path, 'config.json')) &&
    readdirSync(path).some((n) => n.endsWith('.safetensors') || n === 'model.safetensors.index.json');
  if (choice === 'vllm') {
    if (!safetensors)
      throw new InputError(
        { file: spec, field: '--engine' },
        'vLLM serves a Hugging Face directory (config.json and safetensors); this one has none',
      );
    return { engine: 'vllm', path };
  }
  if (onnx || !safetensors) return undefined;
  return choice === 'auto' && vllmServesHere() ? { engine: 'vllm', path } : undefined;
}
