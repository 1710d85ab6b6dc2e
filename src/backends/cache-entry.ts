/**
 * One result-cache entry on disk: the request it answers (the whole key material, not
 * only its hash), the answer, and a SHA-256 over both. Reading one back checks, in
 * order, that it parses, that the checksum holds (a damaged or hand-edited file), that
 * it answers the request asked (a file copied over another), and that the answer has the
 * shape the request calls for (a caller-supplied check). Any failure is a
 * `DamagedCacheEntry`: the cache recomputes and replaces the entry, it never serves it.
 *
 * The checksum finds damage and careless edits; it is not a signature — whoever can
 * write the cache directory can also write a consistent entry.
 */
import { createHash } from 'node:crypto';
import { ProbeError } from '../errors.ts';
import { decode as untagNumbers, encode as tagNumbers } from '../util/tagged-numbers.ts';

/** What fixes an answer: the cache version, the checkpoint (or server weights) fingerprint, the call and its whole request. */
export interface KeyMaterial {
  v: number;
  checkpoint: string;
  op: string;
  request: unknown;
}

/** A file in the cache that must not be served: why, in words. */
export class DamagedCacheEntry extends ProbeError {}

/**
 * JSON with object keys sorted, so equal values give equal text whatever order their
 * keys were built in; NaN and ±Infinity (a log-prob of an impossible token, a server
 * that reported none) are written tagged as in the run logs and read back exactly.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (key, v: unknown) => {
    if (typeof v === 'number') return tagNumbers(key, v);
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const record = v as Record<string, unknown>;
      return Object.fromEntries(
        Object.keys(record)
          .sort()
          .map((k) => [k, record[k]]),
      );
    }
    return v;
  });
}

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The file name of an entry: the hash of its key material. */
export function entryId(key: KeyMaterial): string {
  return sha256(canonicalJson(key));
}

/** The checksum an entry carries: over the canonical JSON of its key material and answer. */
export function entryChecksum(key: unknown, answer: unknown): string {
  return sha256(canonicalJson({ key, answer }));
}

/** The text of an entry file. */
export function sealEntry(key: KeyMaterial, answer: unknown): string {
  return canonicalJson({ key, answer, sha256: entryChecksum(key, answer) });
}

/**
 * The answer in an entry file's text, once it is shown to be intact, to answer `key`,
 * and to pass `check` (which names the first thing wrong with an answer, or returns
 * undefined). Throws `DamagedCacheEntry` otherwise.
 */
export function openEntry(text: string, key: KeyMaterial, check: (answer: unknown) => string | undefined): unknown {
  let entry: unknown;
  try {
    entry = JSON.parse(text, untagNumbers);
  } catch {
    throw new DamagedCacheEntry('not JSON');
  }
  if (!entry || typeof entry !== 'object' || Array.isArray(entry) || !('key' in entry) || !('answer' in entry) || !('sha256' in entry)) {
    throw new DamagedCacheEntry('not a cache entry (no key, answer and sha256)');
  }
  const { key: stored, answer, sha256: checksum } = entry as { key: unknown; answer: unknown; sha256: unknown };
  if (checksum !== entryChecksum(stored, answer))
    throw new DamagedCacheEntry('its checksum does not match its content (edited or damaged)');
  if (canonicalJson(stored) !== canonicalJson(key)) throw new DamagedCacheEntry('it answers another request');
  const problem = check(answer);
  if (problem !== undefined) throw new DamagedCacheEntry(`the answer does not fit the request: ${problem}`);
  return answer;
}
