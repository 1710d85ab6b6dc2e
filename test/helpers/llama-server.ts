/**
 * The real llama.cpp server of ../shared/tools (PROBE_LLAMA_SERVER names another): tests that
 * need it run wherever it is, and with PROBE_REQUIRE_LLAMA_SERVER set (CI) its absence fails
 * them instead of skipping them.
 */
import { accessSync, constants, existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/embedded.ts';

export const LLAMA_SERVER = process.env.PROBE_LLAMA_SERVER ?? join(REPO_ROOT, '..', 'shared', 'tools', 'llama.cpp', 'llama-server');
export const GGUF = {
  s40: join(REPO_ROOT, '..', 'shared', 'models', 'gguf', 'llama-bpe8k-s40-f32.gguf'),
  s250: join(REPO_ROOT, '..', 'shared', 'models', 'gguf', 'llama-bpe8k-s250-f32.gguf'),
  s1500: join(REPO_ROOT, '..', 'shared', 'models', 'gguf', 'llama-bpe8k-s1500-f32.gguf'),
};
export const HF = { s1500: join(REPO_ROOT, '..', 'shared', 'models', 'hf', 'llama-bpe8k-s1500') };

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The server, and the GGUF files the tests serve with it. */
export const llamaServerPresent = executable(LLAMA_SERVER) && Object.values(GGUF).every((file) => existsSync(file));
if (!llamaServerPresent && process.env.PROBE_REQUIRE_LLAMA_SERVER) {
  throw new Error(`PROBE_REQUIRE_LLAMA_SERVER is set but ${LLAMA_SERVER} (or a GGUF file of ../shared/models/gguf) is not there`);
}
