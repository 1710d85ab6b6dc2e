/**
 * A cache of deterministic backend calls, so the same thing is never computed twice:
 * scores, and samples (every sample request carries its seed, and the backends are
 * deterministic given it; greedy ones too). Keyed by what fixes the answer — the
 * checkpoint's content hash (or, for a server, its kind, model, URLs and a fingerprint of
 * the weights behind them: http/fingerprint.ts), the call and its whole request — with
 * one file per entry, written atomically. Errors are never stored: only answers that
 * came back whole and fit their request.
 *
 * An entry is served only when it is intact, answers the very request asked and has the
 * shape that request calls for (cache-entry.ts, cache-shape.ts), and passes what the
 * backend itself holds its answers to (a server's: http/answer-checks.ts). Anything else
 * is computed again and replaced, with one warning per cache directory per process: a
 * damaged cache costs time, never a wrong number or a failed checkpoint. Entries are
 * checked when read, not only when written, so an answer cached before a check existed
 * (a server's lie stored by an older probe) is recomputed, not served.
 */
import { statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { describeCause, systemErrorCode } from '../errors.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { onceUntilFailure } from '../util/once-until-failure.ts';
import { MAX_STRING_BYTES, readRegularFileIfPresent, streamRegularFile, walkTree } from '../util/safe-tree.ts';
import { CHECKPOINT_DIR, CHECKPOINT_LIMITS } from './checkpoint-limits.ts';
import { DamagedCacheEntry, entryId, type KeyMaterial, openEntry, sealEntry } from './cache-entry.ts';
import type { BosUse } from './bos.ts';
import { checkSampleAnswer, checkScoreAnswer } from './cache-shape.ts';
import type { CompletionBackend, RequestLabel, Sample, SampleRequest, ScoreRequest, ScoreResult } from './types.ts';

/**
 * Bump when the meaning of a cached answer changes (scoring rule, sampler) or the entry
 * format does. 3: samples of recognised Llama exports are computed by the shared-prefix
 * decode graph (onnx/prefix-decoder.ts), which rounds differently from the export's own.
 */
export const CACHE_VERSION = 3;

/** Where the cache lives unless `--cache DIR` says otherwise: $PROBE_CACHE_DIR, else the user's cache directory. */
export function defaultCacheDir(): string {
  return process.env.PROBE_CACHE_DIR || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'probe');
}

/** Names the first thing wrong with a stored answer, or returns undefined. */
export type AnswerCheck = (answer: unknown) => string | undefined;

/** Cache directories already warned about a damaged entry in this process: one warning each, however many entries. */
const warnedDamaged = new Set<string>();

/** Read errors that mean "no entry here" rather than a damaged one. */
const ABSENT = new Set(['ENOENT', 'ENOTDIR']);

export class ResultCache {
  /** `damaged`: entries found unfit to serve (each is computed again and replaced). */
  readonly stats = { hits: 0, misses: 0, damaged: 0 };
  private unwritable = false;

  constructor(readonly dir: string) {}

  /** The file that holds the answer to `key`. */
  file(key: KeyMaterial): string {
    const id = entryId(key);
    return join(this.dir, id.slice(0, 2), `${id}.json`);
  }

  /**
   * The stored answer to `key`, if one is there that is intact, answers `key` and passes
   * `check`. A cache directory may be shared or planted: an entry is read only as a regular
   * file really inside it (safe-tree), else it is damaged, computed again and replaced.
   */
  get(key: KeyMaterial, check: AnswerCheck): unknown {
    const file = this.file(key);
    let text: string;
    try {
      const bytes = readRegularFileIfPresent(file, { root: this.dir, maxBytes: MAX_STRING_BYTES, what: 'the cache' });
      if (bytes === undefined) return undefined;
      text = bytes.toString('utf8');
    } catch (error) {
      if (ABSENT.has(systemErrorCode(error) ?? systemErrorCode((error as Error).cause) ?? '')) return undefined;
      return this.damaged(file, new DamagedCacheEntry(`it cannot be read (${describeCause(error)})`));
    }
    try {
      return openEntry(text, key, check);
    } catch (error) {
      if (error instanceof DamagedCacheEntry) return this.damaged(file, error);
      throw error;
    }
  }

  private damaged(file: string, error: DamagedCacheEntry): undefined {
    this.stats.damaged++;
    const dir = resolve(this.dir);
    if (!warnedDamaged.has(dir)) {
      warnedDamaged.add(dir);
      process.stderr.write(
        `probe: warning: the cache in ${this.dir} holds a damaged entry, ${file}: ${error.message}; it is computed again and replaced (so is any other damaged entry in this cache, without another warning)\n`,
      );
    }
    return undefined;
  }

  /** A cache that cannot be written (a read-only home, a full disk) slows a run down; it must not stop it. */
  put(key: KeyMaterial, answer: unknown): void {
    if (this.unwritable) return;
    try {
      writeFileAtomic(this.file(key), sealEntry(key, answer));
    } catch (error) {
      this.unwritable = true;
      process.stderr.write(
        `probe: warning: cannot write the cache in ${this.dir} (${describeCause(error)}); going on without storing results there (--cache DIR or --no-cache)\n`,
      );
    }
  }
}

/** Hashes already computed in this process, with the file sizes and times they were computed from. */
const contentHashes = new Map<string, { stamp: string; hash: string }>();

/**
 * The content hash of a checkpoint directory: every file's path and bytes. A checkpoint
 * of many gigabytes is read once per process: asked again, the hash is reused while every
 * file keeps its size and modification time. The walk is safe-tree's (links followed only
 * to regular files and directories, never in a loop): a FIFO or a device in the directory
 * is refused, naming it, before anything is read.
 */
export function checkpointContentHash(dir: string): string {
  const files = walkTree(dir, { links: 'follow', limits: CHECKPOINT_LIMITS, what: CHECKPOINT_DIR }).filter((e) => e.kind === 'file');
  const stamp = files
    .map((file) => {
      const st = statSync(file.path);
      return `${file.rel}\0${st.size}\0${st.mtimeMs}`;
    })
    .join('\n');
  const known = contentHashes.get(resolve(dir));
  if (known?.stamp === stamp) return known.hash;
  const hash = createHash('sha256');
  for (const file of files) {
    // A file's own SHA-256, read in chunks: ONNX weights of real checkpoints run to many gigabytes.
    const own = createHash('sha256');
    streamRegularFile(file.path, { maxBytes: Number.POSITIVE_INFINITY, what: CHECKPOINT_DIR }, (chunk) => own.update(chunk));
    hash.update(file.rel).update('\0').update(own.digest('hex')).update('\0');
  }
  const digest = hash.digest('hex');
  contentHashes.set(resolve(dir), { stamp, hash: digest });
  return digest;
}

/**
 * What identifies the weights that answer: a string known up front (a checkpoint's
 * content hash), or one found on first use (a server's canary reading, which costs a
 * request). `undefined` from the latter means the weights cannot be told apart, and
 * nothing is cached for that backend.
 */
export type Fingerprint = string | (() => Promise<string | undefined>);

/** Wraps a backend so repeated calls are answered from the cache. */
export class CachedBackend implements CompletionBackend {
  readonly id: string;
  /** The fingerprint, taken once per backend; a failed attempt (a server down) is tried again on the next call. */
  private readonly weights: () => Promise<string | undefined>;

  constructor(
    private readonly inner: CompletionBackend,
    private readonly cache: ResultCache,
    fingerprint: Fingerprint,
  ) {
    this.id = inner.id;
    this.weights = typeof fingerprint === 'string' ? () => Promise.resolve(fingerprint) : onceUntilFailure(fingerprint);
  }

  get concurrency(): number | undefined {
    return this.inner.concurrency;
  }

  get engine(): string | undefined {
    return this.inner.engine;
  }

  encode(text: string): number[] {
    return this.inner.encode(text);
  }

  /** `check` says whether an answer fits its request: stored ones are served, and fresh ones stored, only if it does. */
  private async cached<R extends RequestLabel, T>(
    op: string,
    requests: R[],
    compute: (missing: R[]) => Promise<T[]>,
    check: (request: R, answer: unknown) => string | undefined,
  ): Promise<T[]> {
    const checkpoint = await this.weights();
    if (checkpoint === undefined) {
      this.cache.stats.misses += requests.length;
      return compute(requests);
    }
    // A label names what the request is for, not what is asked: requests that differ only there share an answer.
    const keys: KeyMaterial[] = requests.map(({ label: _, ...request }) => ({ v: CACHE_VERSION, checkpoint, op, request }));
    const found = keys.map((key, i) => this.cache.get(key, (answer) => check(requests[i]!, answer)) as T | undefined);
    const missing = requests.filter((_, i) => found[i] === undefined);
    this.cache.stats.hits += requests.length - missing.length;
    this.cache.stats.misses += missing.length;
    if (missing.length > 0) {
      const computed = await compute(missing);
      let next = 0;
      found.forEach((value, i) => {
        if (value !== undefined) return;
        found[i] = computed[next++]!;
        if (check(requests[i]!, found[i]) === undefined) this.cache.put(keys[i]!, found[i]);
      });
    }
    return found as T[];
  }

  score(requests: ScoreRequest[]): Promise<ScoreResult[][]> {
    return this.cached(
      'score',
      requests,
      (missing) => this.inner.score(missing),
      (request, answer) => checkScoreAnswer(request, answer) ?? this.inner.scoreAnswerProblem?.(request, answer as ScoreResult[]),
    );
  }

  sample(requests: SampleRequest[]): Promise<Sample[][]> {
    return this.cached(
      'sample',
      requests,
      (missing) => this.inner.sample(missing),
      (request, answer) => checkSampleAnswer(request, answer) ?? this.inner.sampleAnswerProblem?.(request, answer as Sample[]),
    );
  }

  async samplerSettings(request: Pick<SampleRequest, 'temperature' | 'topP' | 'topK'>): Promise<Record<string, unknown> | undefined> {
    return this.inner.samplerSettings?.(request);
  }

  async bos(): Promise<BosUse | undefined> {
    return this.inner.bos?.();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
