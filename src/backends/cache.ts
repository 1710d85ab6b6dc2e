/**
 * A cache of deterministic backend calls, so the same thing is never computed twice:
 * scores, and samples (every sample request carries its seed, and the backends are
 * deterministic given it; greedy ones too). Keyed by what fixes the answer — the
 * checkpoint's content hash (or, for a server, its kind, model and URLs), the call and
 * its whole request — with one file per entry, written atomically. Errors are never
 * stored: only answers that came back whole.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { describeCause } from '../errors.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import type { CompletionBackend, Sample, SampleRequest, ScoreRequest, ScoreResult } from './types.ts';

/** Bump when the meaning of a cached answer changes (scoring rule, sampler). */
export const CACHE_VERSION = 1;

/** Where the cache lives unless `--cache DIR` says otherwise: $PROBE_CACHE_DIR, else the user's cache directory. */
export function defaultCacheDir(): string {
  return process.env.PROBE_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'probe');
}

export class ResultCache {
  readonly stats = { hits: 0, misses: 0 };
  private unwritable = false;

  constructor(readonly dir: string) {}

  private file(key: string): string {
    return join(this.dir, key.slice(0, 2), `${key}.json`);
  }

  get<T>(key: string): T | undefined {
    const file = this.file(key);
    if (!existsSync(file)) return undefined;
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as T;
    } catch {
      return undefined; // a damaged entry is recomputed and rewritten
    }
  }

  /** A cache that cannot be written (a read-only home, a full disk) slows a run down; it must not stop it. */
  put(key: string, value: unknown): void {
    if (this.unwritable) return;
    try {
      writeFileAtomic(this.file(key), JSON.stringify(value));
    } catch (error) {
      this.unwritable = true;
      process.stderr.write(`probe: warning: cannot write the cache in ${this.dir} (${describeCause(error)}); going on without storing results there (--cache DIR or --no-cache)\n`);
    }
  }
}

function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).sort().flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** A file's SHA-256, read in chunks: ONNX weights of real checkpoints run to many gigabytes. */
function sha256OfFile(file: string): string {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(4 << 20);
  const fd = openSync(file, 'r');
  try {
    for (let n = readSync(fd, buffer); n > 0; n = readSync(fd, buffer)) hash.update(buffer.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** Hashes already computed in this process, with the file sizes and times they were computed from. */
const contentHashes = new Map<string, { stamp: string; hash: string }>();

/**
 * The content hash of a checkpoint directory: every file's path and bytes. A checkpoint
 * of many gigabytes is read once per process: asked again, the hash is reused while every
 * file keeps its size and modification time.
 */
export function checkpointContentHash(dir: string): string {
  const files = filesUnder(dir);
  const stamp = files.map((file) => {
    const st = statSync(file);
    return `${relative(dir, file)}\0${st.size}\0${st.mtimeMs}`;
  }).join('\n');
  const known = contentHashes.get(resolve(dir));
  if (known?.stamp === stamp) return known.hash;
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(relative(dir, file)).update('\0').update(sha256OfFile(file)).update('\0');
  }
  const digest = hash.digest('hex');
  contentHashes.set(resolve(dir), { stamp, hash: digest });
  return digest;
}

/** Wraps a backend so repeated calls are answered from the cache. */
export class CachedBackend implements CompletionBackend {
  readonly id: string;

  constructor(private readonly inner: CompletionBackend, private readonly cache: ResultCache, private readonly fingerprint: string) {
    this.id = inner.id;
  }

  encode(text: string): number[] {
    return this.inner.encode(text);
  }

  private key(op: string, request: unknown): string {
    return sha256(JSON.stringify({ v: CACHE_VERSION, checkpoint: this.fingerprint, op, request }));
  }

  /** `storable` keeps out answers JSON cannot hold exactly (a server that gave no log-prob: NaN). */
  private async cached<R, T>(op: string, requests: R[], compute: (missing: R[]) => Promise<T[]>, storable: (value: T) => boolean = () => true): Promise<T[]> {
    const keys = requests.map((r) => this.key(op, r));
    const found = keys.map((k) => this.cache.get<T>(k));
    const missing = requests.filter((_, i) => found[i] === undefined);
    this.cache.stats.hits += requests.length - missing.length;
    this.cache.stats.misses += missing.length;
    if (missing.length > 0) {
      const computed = await compute(missing);
      let next = 0;
      found.forEach((value, i) => {
        if (value !== undefined) return;
        found[i] = computed[next++]!;
        if (storable(found[i]!)) this.cache.put(keys[i]!, found[i]);
      });
    }
    return found as T[];
  }

  score(requests: ScoreRequest[]): Promise<ScoreResult[][]> {
    return this.cached('score', requests, (missing) => this.inner.score(missing));
  }

  sample(requests: SampleRequest[]): Promise<Sample[][]> {
    return this.cached('sample', requests, (missing) => this.inner.sample(missing), (samples) => samples.every((s) => Number.isFinite(s.logprob)));
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
