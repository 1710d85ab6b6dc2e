/** The cache of deterministic backend calls: hits, seeds in the key, content hashes, no cached errors. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CachedBackend, checkpointContentHash, ResultCache } from '../src/backends/cache.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { openBackend } from '../src/backends/open.ts';
import type { CompletionBackend, ScoreResult } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { CKPT, copyCheckpoint, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';

/** Counts the calls that reach the real backend; can fail the next call on purpose. */
function counting(inner: CompletionBackend) {
  const calls = { score: 0, sample: 0, failNext: false };
  const backend: CompletionBackend = {
    id: inner.id,
    encode: (t) => inner.encode(t),
    close: () => inner.close(),
    score: async (r) => {
      calls.score += r.length;
      return inner.score(r);
    },
    sample: async (r) => {
      if (calls.failNext) {
        calls.failNext = false;
        throw new Error('server fell over');
      }
      calls.sample += r.length;
      return inner.sample(r);
    },
  };
  return { backend, calls };
}

const entries = (dir: string) => readdirSync(dir).flatMap((d) => readdirSync(join(dir, d))).length;

describe('cached backend', () => {
  it('answers a repeated score from the cache, equal to the computed one; new requests still reach the model', async () => {
    const inner = await OnnxBackend.open(CKPT.agent);
    const { backend, calls } = counting(inner);
    const cache = new ResultCache(tempDir());
    const cached = new CachedBackend(backend, cache, checkpointContentHash(CKPT.agent));
    const request = { context: 'def add(a, b):\n', continuations: ['    return a + b\n', '    return a - b\n'] };
    const first = await cached.score([request]);
    const second = await cached.score([request, { context: 'x = ', continuations: ['1'] }]);
    expect(second[0]).toEqual(first[0]);
    expect(calls.score).toBe(2);
    expect(cache.stats).toEqual({ hits: 1, misses: 2, damaged: 0 });
    await inner.close();
  });

  it('keys samples by their seed, and never stores an error', async () => {
    const inner = await OnnxBackend.open(CKPT.agent);
    const { backend, calls } = counting(inner);
    const cached = new CachedBackend(backend, new ResultCache(tempDir()), 'test');
    const request = { prompt: '## Thinking\n', n: 2, temperature: 0.7, topP: 0.95, maxTokens: 20, stop: ['</bash>'], seed: 1 };
    calls.failNext = true;
    await expect(cached.sample([request])).rejects.toThrow('server fell over');
    const a = await cached.sample([request]);
    const again = await cached.sample([request]);
    const other = await cached.sample([{ ...request, seed: 2 }]);
    expect(again).toEqual(a);
    expect(calls.sample).toBe(2); // seed 1 once (after the failure), seed 2 once
    expect(other[0]!.map((s) => s.text)).not.toEqual(a[0]!.map((s) => s.text));
    await inner.close();
  });

  it('stores -Infinity log-probs tagged and serves them exactly; an answer that does not fit its request is never stored', async () => {
    // An impossible token (-Infinity) and, for the second request, one result too few.
    const result: ScoreResult = { tokenLogprobs: [-Infinity, -0.5], tokens: [1, 2], bytes: 2, greedy: false, truncated: false };
    let calls = 0;
    const backend: CompletionBackend = {
      id: 'stub',
      encode: () => [],
      close: async () => {},
      sample: async () => [],
      score: async (requests) => {
        calls += requests.length;
        return requests.map(() => [result]);
      },
    };
    const dir = tempDir();
    const cached = () => new CachedBackend(backend, new ResultCache(dir), 'stub');
    const impossible = { context: 'a', continuations: ['bc'] };
    const unfit = { context: 'a', continuations: ['bc', 'de'] };
    expect(await cached().score([impossible, unfit])).toEqual([[result], [result]]);
    expect(entries(dir)).toBe(1);
    const again = cached();
    expect(await again.score([impossible, unfit])).toEqual([[result], [result]]);
    expect(calls).toBe(3); // the unfit answer is computed each time
    expect((await again.score([impossible]))[0]![0]!.tokenLogprobs[0]).toBe(-Infinity);
  });

  it('a checkpoint whose files change gets another key', async () => {
    const copy = copyCheckpoint(CKPT.agent);
    const before = checkpointContentHash(copy);
    expect(checkpointContentHash(copy)).toBe(before);
    const config = JSON.parse(readFileSync(join(copy, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(copy, 'config.json'), `${JSON.stringify({ ...config, note: 'retrained' })}\n`);
    expect(checkpointContentHash(copy)).not.toBe(before);
    const cache = new ResultCache(tempDir());
    const request = { context: 'a', continuations: ['b'] };
    const one = await openBackend(CKPT.agent, { cache });
    await one.score([request]);
    await one.close();
    const two = await openBackend(copy, { cache });
    await two.score([request]);
    await two.close();
    expect(cache.stats).toEqual({ hits: 0, misses: 2, damaged: 0 });
  });

  it('probe bpb --cache: a second run is served from the cache with the same JSON', () => {
    const dir = tempDir();
    const run = () =>
      spawnSync(process.execPath, [PROBE_BIN, 'bpb', '--ckpt', CKPT.agent, '--probes', DEMO_PROBES, '--cache', dir, '--json'], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 120_000,
      });
    const first = run();
    expect(first.status, first.stderr).toBe(0);
    const stored = entries(dir);
    expect(stored).toBeGreaterThan(0);
    const second = run();
    expect(second.stdout).toBe(first.stdout);
    expect(entries(dir)).toBe(stored);
  });

  it('is on by default ($PROBE_CACHE_DIR), off with --no-cache, and a cache that cannot be written only warns', () => {
    const dir = tempDir();
    const bpb = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      spawnSync(process.execPath, [PROBE_BIN, 'bpb', '--ckpt', CKPT.agent, '--probes', DEMO_PROBES, '--limit', '3', '--json', ...args], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, PROBE_CACHE_DIR: dir, ...env },
      });
    const off = bpb(['--no-cache']);
    expect(off.status, off.stderr).toBe(0);
    expect(existsSync(dir) ? entries(dir) : 0).toBe(0);
    const on = bpb([]);
    expect(on.stdout).toBe(off.stdout);
    expect(entries(dir)).toBeGreaterThan(0);
    // A file where the cache directory should be: every write fails.
    const blocked = join(tempDir(), 'a-file');
    writeFileSync(blocked, '');
    const unwritable = bpb(['--cache', join(blocked, 'cache')]);
    expect(unwritable.status, unwritable.stderr).toBe(0);
    expect(unwritable.stdout).toBe(off.stdout);
    expect(unwritable.stderr.match(/warning: cannot write the cache/g)).toHaveLength(1);
  });
});
