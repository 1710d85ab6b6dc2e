/**
 * Where an engine's program is: the environment variable that names it (PROBE_LLAMA_SERVER,
 * PROBE_VLLM), else the first match on PATH. A variable that names no executable file is bad
 * input; an engine found nowhere is a one-line error saying what would serve the checkpoint.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { InputError } from '../errors.ts';
import type { EngineName, EngineTarget } from './engine-target.ts';

const PROGRAM: Record<EngineName, { env: string; name: string }> = {
  llamacpp: { env: 'PROBE_LLAMA_SERVER', name: 'llama-server' },
  vllm: { env: 'PROBE_VLLM', name: 'vllm' },
};

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The engine's program: the file its variable names (an InputError if that is no executable), else the first on PATH, else undefined. */
export function engineProgram(engine: EngineName): string | undefined {
  const { env, name } = PROGRAM[engine];
  const named = process.env[env];
  if (named) {
    if (!executable(named)) throw new InputError({ file: env }, `${named} is not an executable file (it should be ${name})`);
    return named;
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    if (executable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The program that serves `target`, or an InputError (exit 2) naming the command that would serve it. */
export function findEngine(spec: string, target: EngineTarget): string {
  const program = engineProgram(target.engine);
  if (program) return program;
  throw new InputError({ file: spec }, missingEngine(spec, target));
}

function missingEngine(spec: string, target: EngineTarget): string {
  if (target.engine === 'llamacpp')
    return `a GGUF checkpoint is served for the run by llama.cpp's llama-server, which is not on PATH (or name it in PROBE_LLAMA_SERVER); or serve it yourself — llama-server -m ${spec} --port 8080 -np 16 -no-kvu — and pass --ckpt http://127.0.0.1:8080`;
  return `--engine vllm serves a Hugging Face checkpoint for the run with vLLM, which is not on PATH (or name it in PROBE_VLLM); or serve it yourself — vllm serve ${spec} --port 8000 — and pass --ckpt http://127.0.0.1:8000/v1, or run it in process (--engine in-process, docs/checkpoints.md)`;
}
