/** Turns a `--ckpt` argument into a backend (design.md, "Checkpoints"): a directory, or server URLs. */
import { type Checkpoint, resolveCheckpoint } from './checkpoint.ts';
import { HttpBackend, type HttpBackendOptions } from './http/backend.ts';
import { OnnxBackend, type OnnxBackendOptions } from './onnx/backend.ts';
import { DEFAULT_DTYPE, type Dtype } from './onnx/dtype.ts';
import { isHfDirectory } from './checkpoint-dir.ts';
import { GRAPH_BUILDER_VERSION } from './transformer/model.ts';
import type { CompletionBackend } from './types.ts';
import { bosKey } from './bos.ts';
import { CachedBackend, checkpointContentHash, type ResultCache } from './cache.ts';
import { serverFingerprint } from './http/fingerprint.ts';
import { launchEngine } from '../engines/launch.ts';
import { idFileName } from '../util/file-name.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createHash } from 'node:crypto';

/** Checks a checkpoint's files (or a server URL's form) without loading anything, so bad input is caught before any work. */
export function checkCheckpoint(spec: string, http: HttpBackendOptions = {}, dtype?: Dtype): void {
  resolveCheckpoint(spec, { http, dtype });
}

export interface OpenOptions extends OnnxBackendOptions {
  http?: HttpBackendOptions;
  /** Answer repeated deterministic calls from this cache. */
  cache?: ResultCache;
  /** Where an engine probe starts writes its log (the run directory's `engines/`; else a temporary directory). */
  engineLogDir?: string;
}

/** Opens a resolved checkpoint (or resolves a `--ckpt` argument first). */
export async function openBackend(checkpoint: Checkpoint | string, options: OpenOptions = {}): Promise<CompletionBackend> {
  const ckpt = typeof checkpoint === 'string' ? resolveCheckpoint(checkpoint, { http: options.http, dtype: options.dtype }) : checkpoint;
  if (ckpt.kind === 'engine') return openEngine(ckpt, options);
  if (ckpt.kind === 'server')
    return serverBackend(
      await HttpBackend.open(ckpt.name, { ...options.http, ...(options.bos ? { bos: options.bos } : {}) }),
      options.cache,
    );
  const backend = await OnnxBackend.open(ckpt.name, options);
  if (!options.cache) return backend;
  // A directory is keyed by its content, the graph that runs (--dtype) and the BOS put before contexts.
  return new CachedBackend(backend, options.cache, `${directoryFingerprint(ckpt.dir, options.dtype)}${bosKey(backend.bosUse)}`);
}

/**
 * A server is keyed by what it says it serves, where, a canary reading of the weights behind
 * it (taken on first use) and the BOS used.
 */
function serverBackend(server: HttpBackend, cache: ResultCache | undefined): CompletionBackend {
  if (!cache) return server;
  return new CachedBackend(server, cache, async () => {
    const weights = await serverFingerprint(server, cache);
    return weights === undefined ? undefined : `${weights}${bosKey(await server.bos())}`;
  });
}

/**
 * A GGUF file or a Hugging Face directory: its engine is started for the run, spoken to as
 * the server it is (kind fixed, so nothing is guessed; a Hugging Face directory's own
 * tokenizer counts the text), cached as a server is, and stopped when the backend closes.
 */
async function openEngine(ckpt: Extract<Checkpoint, { kind: 'engine' }>, options: OpenOptions): Promise<CompletionBackend> {
  const logDir = options.engineLogDir ?? mkdtempSync(join(tmpdir(), 'probe-engine-'));
  // The log is named for the file or directory, with a digest of its path so two of one name in a run keep their own.
  const name = `${idFileName(basename(ckpt.path))}-${createHash('sha256').update(ckpt.key).digest('hex').slice(0, 8)}`;
  const engine = await launchEngine(ckpt.program, ckpt, { logDir, name, ...(options.http?.signal ? { signal: options.http.signal } : {}) });
  try {
    const server = await HttpBackend.open(engine.urls.join(','), {
      ...options.http,
      // As many requests in flight as the engine has slots (each asks for at most that many samples).
      ...(engine.slots ? { endpoint: { ...options.http?.endpoint, concurrency: engine.slots } } : {}),
      kind: ckpt.engine,
      ...(ckpt.engine === 'vllm' ? { tokenizerDir: ckpt.path } : {}),
      ...(options.bos ? { bos: options.bos } : {}),
      onClose: engine.stop,
    });
    return serverBackend(server, options.cache);
  } catch (error) {
    await engine.stop();
    throw error;
  }
}

/**
 * A directory is keyed by its content, and by which of its graphs runs: the hash covers
 * every file, so model.onnx and model_fp16.onnx of one directory share it. fp32 keeps the
 * key it had before dtypes existed, so caches written then still answer. A Hugging Face
 * directory's graph is probe's own, not in its files: its answers are keyed by the
 * builder that made the graph too, so a change to the arithmetic never answers from the
 * old one's cache.
 */
export function directoryFingerprint(dir: string, dtype: Dtype = DEFAULT_DTYPE): string {
  const content = `content:${checkpointContentHash(dir)}${isHfDirectory(dir) ? `:graph=${GRAPH_BUILDER_VERSION}` : ''}`;
  return dtype === DEFAULT_DTYPE ? content : `${content}:dtype=${dtype}`;
}
