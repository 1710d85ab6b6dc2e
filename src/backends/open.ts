/** Turns a `--ckpt` argument into a backend (design.md, "Checkpoints"): a directory, or server URLs. */
import { type Checkpoint, resolveCheckpoint } from './checkpoint.ts';
import { HttpBackend, type HttpBackendOptions } from './http/backend.ts';
import { OnnxBackend, type OnnxBackendOptions } from './onnx/backend.ts';
import { DEFAULT_DTYPE, type Dtype } from './onnx/dtype.ts';
import type { CompletionBackend } from './types.ts';
import { bosKey } from './bos.ts';
import { CachedBackend, checkpointContentHash, type ResultCache } from './cache.ts';
import { serverFingerprint } from './http/fingerprint.ts';

/** Checks a checkpoint's files (or a server URL's form) without loading anything, so bad input is caught before any work. */
export function checkCheckpoint(spec: string, http: HttpBackendOptions = {}, dtype?: Dtype): void {
  resolveCheckpoint(spec, { http, dtype });
}

export interface OpenOptions extends OnnxBackendOptions {
  http?: HttpBackendOptions;
  /** Answer repeated deterministic calls from this cache. */
  cache?: ResultCache;
}

/** Opens a resolved checkpoint (or resolves a `--ckpt` argument first). */
export async function openBackend(checkpoint: Checkpoint | string, options: OpenOptions = {}): Promise<CompletionBackend> {
  const ckpt = typeof checkpoint === 'string' ? resolveCheckpoint(checkpoint, { http: options.http, dtype: options.dtype }) : checkpoint;
  if (ckpt.kind === 'server') {
    const server = await HttpBackend.open(ckpt.name, { ...options.http, ...(options.bos ? { bos: options.bos } : {}) });
    if (!options.cache) return server;
    // A server is keyed by what it says it serves, where, a canary reading of the weights behind it (taken on first use) and the BOS used.
    const cache = options.cache;
    return new CachedBackend(server, cache, async () => {
      const weights = await serverFingerprint(server, cache);
      return weights === undefined ? undefined : `${weights}${bosKey(await server.bos())}`;
    });
  }
  const backend = await OnnxBackend.open(ckpt.name, options);
  if (!options.cache) return backend;
  // A directory is keyed by its content, the graph that runs (--dtype) and the BOS put before contexts.
  return new CachedBackend(backend, options.cache, `${directoryFingerprint(ckpt.dir, options.dtype)}${bosKey(backend.bosUse)}`);
}

/**
 * A directory is keyed by its content, and by which of its graphs runs: the hash covers
 * every file, so model.onnx and model_fp16.onnx of one directory share it. fp32 keeps the
 * key it had before dtypes existed, so caches written then still answer.
 */
export function directoryFingerprint(dir: string, dtype: Dtype = DEFAULT_DTYPE): string {
  const content = `content:${checkpointContentHash(dir)}`;
  return dtype === DEFAULT_DTYPE ? content : `${content}:dtype=${dtype}`;
}
