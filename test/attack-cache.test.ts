/**
 * Attacks on the result cache (issue 12, point 5), through real parts: an ONNX
 * checkpoint, and `probe serve`'s server behind a URL. Every tampered entry the red team
 * got served — halved log-probs, another item's entry, an extra token, a null log-prob —
 * and every entry that failed a checkpoint or threw — `[]`, `[{"tokenLogprobs":"x"}]`,
 * garbage bytes — must be computed again, equal to the uncached answer, with one
 * warning naming the cache; and other weights put behind the same URL and model name
 * must never get the old weights' answers.
 */
import { spawnSync } from 'node:child_process';
import type { Server } from 'node:http';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { canonicalJson, entryChecksum } from '../src/backends/cache-entry.ts';
import { ResultCache } from '../src/backends/cache.ts';
import { CANARY_TOLERANCE } from '../src/backends/http/fingerprint.ts';
import type { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { openBackend, type OpenOptions } from '../src/backends/open.ts';
import type { Sample, SampleRequest, ScoreRequest, ScoreResult } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { launchEngine, type RunningEngine } from '../src/engines/launch.ts';
import { close, FaultProxy, serveCheckpoint } from './helpers/http.ts';
import { GGUF, HF, LLAMA_SERVER, llamaServerPresent } from './helpers/llama-server.ts';
import { CKPT, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';

const R1: ScoreRequest = { context: 'def add(a, b):\n', continuations: ['    return a + b\n', '    return a - b\n'] };
/** Another item with R1's shape (as many continuations, as many bytes): only the request an entry carries tells them apart. */
const R2: ScoreRequest = { context: 'total = a * b # sum\n', continuations: R1.continuations };
/** An item of another shape. */
const R3: ScoreRequest = { context: 'The licence is granted', continuations: [' to you.'] };
const S1: SampleRequest = { prompt: '## Thinking\n', n: 2, temperature: 0.7, topP: 0.95, maxTokens: 20, stop: ['</bash>'], seed: 1 };

/** Negative log-likelihood of a result list: the number a tampered entry would change. */
const nats = (results: ScoreResult[]) => results.map((r) => -r.tokenLogprobs.reduce((a, b) => a + b, 0));

interface Entry {
  key: { op: string; request: unknown };
  answer: any;
  sha256: string;
}

function entryFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((shard) => readdirSync(join(dir, shard)).map((f) => join(dir, shard, f)));
}

/** The file holding the answer to `request` (found by the request every entry carries). */
function entryFile(dir: string, op: string, request: unknown): string {
  const file = entryFiles(dir).find((f) => {
    const entry = JSON.parse(readFileSync(f, 'utf8')) as Entry;
    return entry.key.op === op && canonicalJson(entry.key.request) === canonicalJson(request);
  });
  if (!file) throw new Error(`no ${op} entry in ${dir}`);
  return file;
}

/** Rewrites an entry's answer; `reseal` recomputes its checksum, as an attacker who knows the format would. */
function editAnswer(file: string, edit: (answer: any) => void, reseal = false): void {
  const entry = JSON.parse(readFileSync(file, 'utf8')) as Entry;
  edit(entry.answer);
  if (reseal) entry.sha256 = entryChecksum(entry.key, entry.answer);
  writeFileSync(file, JSON.stringify(entry));
}

/** The cache's warnings about damaged entries while `work` runs. */
async function damageWarnings(work: () => Promise<void>): Promise<string[]> {
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    await work();
    return spy.mock.calls.map((c) => String(c[0])).filter((line) => line.includes('damaged entry'));
  } finally {
    spy.mockRestore();
  }
}

/** A score through a fresh cached backend on `dir` (a new run), with the cache it used. */
async function scoreCached(
  spec: string,
  dir: string,
  request: ScoreRequest,
  options: OpenOptions = {},
): Promise<{ results: ScoreResult[]; cache: ResultCache }> {
  const cache = new ResultCache(dir);
  const backend = await openBackend(spec, { ...options, cache });
  try {
    return { results: (await backend.score([request]))[0]!, cache };
  } finally {
    await backend.close();
  }
}

/** Tampers with R1's entry `file`; `entry` finds the entry of another request (R2, R3). */
type Attack = [name: string, tamper: (file: string, entry: (request: ScoreRequest) => string) => void];

const halve = (answer: any) => {
  answer[0].tokenLogprobs = answer[0].tokenLogprobs.map((v: number) => v / 2);
};
const ATTACKS: Attack[] = [
  ['halved log-probs', (f) => editAnswer(f, halve)],
  ["another item's entry copied over", (f, entry) => writeFileSync(f, readFileSync(entry(R2)))],
  [
    'an extra token',
    (f) =>
      editAnswer(f, (a) => {
        a[0].tokens.push(5);
        a[0].tokenLogprobs.push(-3);
      }),
  ],
  [
    'a null log-prob',
    (f) =>
      editAnswer(f, (a) => {
        a[0].tokenLogprobs[1] = null;
      }),
  ],
  ['[]', (f) => writeFileSync(f, '[]')],
  ['[{"tokenLogprobs":"x"}]', (f) => writeFileSync(f, '[{"tokenLogprobs":"x"}]')],
  ['garbage bytes', (f) => writeFileSync(f, Buffer.from([0xff, 0xfe, 0x00, 0x13, 0x37, 0x7b]))],
  // The checksum recomputed: the shape check alone must catch these.
  [
    'an extra token, checksum recomputed',
    (f) =>
      editAnswer(
        f,
        (a) => {
          a[0].tokens.push(5);
        },
        true,
      ),
  ],
  [
    'a null log-prob, checksum recomputed',
    (f) =>
      editAnswer(
        f,
        (a) => {
          a[0].tokenLogprobs[1] = null;
        },
        true,
      ),
  ],
  [
    'a string log-prob, checksum recomputed',
    (f) =>
      editAnswer(
        f,
        (a) => {
          a[0].tokenLogprobs[0] = 'x';
        },
        true,
      ),
  ],
  [
    'one result for two continuations, checksum recomputed',
    (f) =>
      editAnswer(
        f,
        (a) => {
          a.pop();
        },
        true,
      ),
  ],
  [
    "an item of another shape's answer under this request's key, checksum recomputed",
    (f, entry) => {
      const theirs = JSON.parse(readFileSync(entry(R3), 'utf8')) as Entry;
      editAnswer(
        f,
        (a) => {
          a.splice(0, a.length, theirs.answer[0], theirs.answer[0]);
        },
        true,
      );
    },
  ],
];

/**
 * Fills a fresh cache with R1, R2 and R3, tampers R1's entry, and reads R1 in a new run:
 * the answer must equal `truth`, with one warning naming the cache and the file, and
 * the entry replaced by a good one (the run after is a hit, with no warning).
 */
async function expectRecomputed(spec: string, truth: ScoreResult[], tamper: Attack[1], options: OpenOptions = {}): Promise<void> {
  const dir = tempDir('probe-attack-cache-');
  for (const request of [R1, R2, R3]) await scoreCached(spec, dir, request, options);
  const file = entryFile(dir, 'score', R1);
  tamper(file, (request) => entryFile(dir, 'score', request));
  let read!: Awaited<ReturnType<typeof scoreCached>>;
  const warnings = await damageWarnings(async () => {
    read = await scoreCached(spec, dir, R1, options);
  });
  expect(read.results).toEqual(truth);
  expect(nats(read.results)).toEqual(nats(truth));
  expect(read.cache.stats).toMatchObject({ hits: 0, misses: 1, damaged: 1 });
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(dir);
  expect(warnings[0]).toContain(file);
  const again = await damageWarnings(async () => {
    read = await scoreCached(spec, dir, R1, options);
  });
  expect(again).toEqual([]);
  expect(read.cache.stats).toMatchObject({ hits: 1, misses: 0, damaged: 0 });
  expect(read.results).toEqual(truth);
}

describe('a tampered entry of an ONNX checkpoint is computed again', () => {
  let truth: ScoreResult[];

  it("R2's answer has R1's shape and other numbers (so serving it would be a wrong number)", async () => {
    const [one, two] = await (await openBackend(CKPT.agent)).score([R1, R2]);
    expect(two!.map((r) => [r.tokens.length, r.bytes])).toEqual(one!.map((r) => [r.tokens.length, r.bytes]));
    expect(nats(two!)).not.toEqual(nats(one!));
  });

  it.each(ATTACKS)('%s', async (_name, tamper) => {
    truth ??= (await (await openBackend(CKPT.agent)).score([R1]))[0]!;
    await expectRecomputed(CKPT.agent, truth, tamper);
  });

  it('tampered samples (one dropped, a bad finish reason, halved log-probs) are computed again', async () => {
    const uncached = await openBackend(CKPT.agent);
    const truthSamples = (await uncached.sample([S1]))[0]!;
    const tampers: Array<(a: any) => void> = [
      (a) => a.pop(),
      (a) => {
        a[0].finishReason = 'bogus';
      },
      (a) => {
        a[1].logprob /= 2;
      },
    ];
    for (const [i, edit] of tampers.entries()) {
      const dir = tempDir('probe-attack-cache-');
      const fill = await openBackend(CKPT.agent, { cache: new ResultCache(dir) });
      await fill.sample([S1]);
      editAnswer(entryFile(dir, 'sample', S1), edit, i < 2);
      const cache = new ResultCache(dir);
      const backend = await openBackend(CKPT.agent, { cache });
      let samples: unknown;
      const warnings = await damageWarnings(async () => {
        samples = (await backend.sample([S1]))[0];
      });
      expect(samples).toEqual(truthSamples);
      expect(cache.stats.damaged).toBe(1);
      expect(warnings).toHaveLength(1);
    }
  });

  it('warns once per cache directory, however many entries are damaged', async () => {
    const dirs = [tempDir('probe-attack-cache-'), tempDir('probe-attack-cache-')];
    for (const dir of dirs) {
      await scoreCached(CKPT.agent, dir, R1);
      await scoreCached(CKPT.agent, dir, R2);
      for (const file of entryFiles(dir)) writeFileSync(file, '[]');
    }
    const warnings = await damageWarnings(async () => {
      for (const dir of dirs) {
        const { cache } = await scoreCached(CKPT.agent, dir, R1);
        const second = await scoreCached(CKPT.agent, dir, R2);
        expect(cache.stats.damaged + second.cache.stats.damaged).toBe(2);
      }
    });
    expect(warnings).toHaveLength(2);
    dirs.forEach((dir, i) => expect(warnings[i]).toContain(dir));
  });

  it('probe bpb over a cache whose every entry is [] succeeds with the uncached numbers and one warning', () => {
    const dir = tempDir('probe-attack-cache-');
    const bpb = (args: string[]) =>
      spawnSync(process.execPath, [PROBE_BIN, 'bpb', '--ckpt', CKPT.agent, '--probes', DEMO_PROBES, '--limit', '3', '--json', ...args], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 120_000,
      });
    const uncached = bpb(['--no-cache']);
    expect(uncached.status, uncached.stderr).toBe(0);
    expect(bpb(['--cache', dir]).status).toBe(0);
    for (const file of entryFiles(dir)) writeFileSync(file, '[]');
    const attacked = bpb(['--cache', dir]);
    expect(attacked.status, attacked.stderr).toBe(0);
    expect(attacked.stdout).toBe(uncached.stdout);
    const warnings = attacked.stderr.split('\n').filter((line) => line.includes('damaged entry'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(dir);
    expect(attacked.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });
});

describe('a server', () => {
  const running: Array<{ server: Server; backend: OnnxBackend }> = [];
  const proxies: FaultProxy[] = [];
  const engines: RunningEngine[] = [];
  afterEach(async () => {
    for (const p of proxies.splice(0)) await p.stop();
    for (const e of engines.splice(0)) await e.stop();
    for (const s of running.splice(0)) {
      await close(s.server);
      await s.backend.close();
    }
  });

  /** `probe serve`'s server on `dir` as model "test-model" (on `port` when given). */
  async function serve(dir: string, port = 0): Promise<string> {
    const served = await serveCheckpoint(dir, 2, port);
    running.push(served);
    return served.url;
  }

  async function stopAll(): Promise<void> {
    for (const s of running.splice(0)) {
      await close(s.server);
      await s.backend.close();
    }
  }

  const uncachedScore = async (spec: string, options: OpenOptions = {}) => (await (await openBackend(spec, options)).score([R1]))[0]!;

  it.each(ATTACKS)('a tampered server entry is computed again: %s', async (_name, tamper) => {
    const url = `${await serve(CKPT.agent)}/v1`;
    await expectRecomputed(url, await uncachedScore(url), tamper);
  });

  it('other weights behind the same URL and model name get fresh, correct numbers; the old weights back get their own', async () => {
    const dir = tempDir('probe-attack-cache-');
    const first = await serve(CKPT.agent);
    const url = `${first}/v1`;
    const port = Number(new URL(first).port);
    const agentTruth = await uncachedScore(url);
    const filled = await scoreCached(url, dir, R1);
    expect(filled.results).toEqual(agentTruth);

    await stopAll();
    await serve(CKPT.code, port);
    const codeTruth = await uncachedScore(url);
    expect(nats(codeTruth)).not.toEqual(nats(agentTruth));
    const swapped = await scoreCached(url, dir, R1);
    expect(nats(swapped.results)).toEqual(nats(codeTruth));
    expect(swapped.cache.stats).toMatchObject({ hits: 0, misses: 1 });

    // The first weights back behind the URL: their canary matches the stored reading, so their answers are hits again.
    await stopAll();
    await serve(CKPT.agent, port);
    const back = await scoreCached(url, dir, R1);
    expect(back.results).toEqual(agentTruth);
    expect(back.cache.stats).toMatchObject({ hits: 1, misses: 0 });
  });

  it(`canary noise within ${CANARY_TOLERANCE} nats keeps the fingerprint; a bigger change is other weights`, async () => {
    const dir = tempDir('probe-attack-cache-');
    const proxy = new FaultProxy(await serve(CKPT.agent), [], (path) => path === '/v1/completions');
    proxies.push(proxy);
    const url = `${await proxy.start()}/v1`;
    const truth = await uncachedScore(url);
    await scoreCached(url, dir, R1);
    // The canary is the first completion request of a cached backend: shift its log-probs (never above 0: a server
    // answering a log-prob no model produces is refused, not fingerprinted).
    const shift = (by: number) => ({
      kind: 'rewrite' as const,
      rewrite: (answer: any) => {
        const lps = answer.choices[0].logprobs.token_logprobs as Array<number | null>;
        answer.choices[0].logprobs.token_logprobs = lps.map((v, i) => (v === null ? v : Math.min(0, v + (i % 2 ? by : -by))));
        return answer;
      },
    });
    proxy.faults = [shift(CANARY_TOLERANCE / 10)];
    const noisy = await scoreCached(url, dir, R1);
    expect(noisy.cache.stats).toMatchObject({ hits: 1, misses: 0 });
    expect(noisy.results).toEqual(truth);
    proxy.faults = [shift(CANARY_TOLERANCE * 10)];
    const changed = await scoreCached(url, dir, R1);
    expect(changed.cache.stats).toMatchObject({ hits: 0, misses: 1 });
    expect(changed.results).toEqual(truth);
  });

  // The real llama.cpp server on the GGUF ladder: it samples but cannot score, so its weights are read by a greedy canary sample.
  describe.skipIf(!llamaServerPresent)('that cannot score (the real llama.cpp server)', () => {
    const llamaServer = async (gguf: string) => {
      const engine = await launchEngine(LLAMA_SERVER, { engine: 'llamacpp', path: gguf }, { logDir: tempDir(), name: 'cache' });
      engines.push(engine);
      return engine.urls[0]!;
    };
    const llama = (dir?: string): OpenOptions => ({
      http: { kind: 'llamacpp', tokenizerDir: HF.s1500 },
      ...(dir ? { cache: new ResultCache(dir) } : {}),
    });
    const sampleWith = async (url: string, options: OpenOptions) => (await (await openBackend(url, options)).sample([S1]))[0]!;
    // llama.cpp's log-probs move in the 6th digit with its prompt cache (the texts do not): sums compared to 1e-4 nats.
    const same = (got: Sample[], want: Sample[]) => {
      expect(got.map(({ logprob: _, ...rest }) => rest)).toEqual(want.map(({ logprob: _, ...rest }) => rest));
      got.forEach((g, i) => expect(Math.abs(g.logprob - want[i]!.logprob)).toBeLessThan(1e-4));
    };

    it('is fingerprinted by a greedy canary sample: other weights behind the URL get fresh samples', async () => {
      const dir = tempDir('probe-attack-cache-');
      const proxy = new FaultProxy(await llamaServer(GGUF.s40));
      proxies.push(proxy);
      const url = await proxy.start();
      const earlySamples = await sampleWith(url, llama());
      same(await sampleWith(url, llama(dir)), earlySamples);
      const hit = llama(dir);
      same(await sampleWith(url, hit), earlySamples);
      expect(hit.cache!.stats).toMatchObject({ hits: 1, misses: 0 });

      proxy.target = await llamaServer(GGUF.s1500); // other weights, same URL
      const laterSamples = await sampleWith(url, llama());
      expect(laterSamples.map((s) => s.text)).not.toEqual(earlySamples.map((s) => s.text));
      const swapped = llama(dir);
      same(await sampleWith(url, swapped), laterSamples);
      expect(swapped.cache!.stats).toMatchObject({ hits: 0, misses: 1 });
    }, 120_000);

    it('one that reports no log-probs is not cached at all, with a warning', async () => {
      const dir = tempDir('probe-attack-cache-');
      const proxy = new FaultProxy(await llamaServer(GGUF.s40), [], (path) => path === '/completion');
      proxies.push(proxy);
      const url = await proxy.start();
      const strip = () => ({
        kind: 'rewrite' as const,
        rewrite: (answer: any) => (Array.isArray(answer) ? answer : [answer]).map(({ completion_probabilities: _, ...rest }: any) => rest),
      });
      proxy.faults = Array.from({ length: 10 }, strip);
      const truth = await sampleWith(url, llama());
      const spy = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
      try {
        for (let run = 0; run < 2; run++) {
          proxy.faults = Array.from({ length: 10 }, strip);
          const options = llama(dir);
          expect(await sampleWith(url, options)).toEqual(truth);
          expect(options.cache!.stats).toMatchObject({ hits: 0, misses: 1 });
        }
        const warnings = spy.mock.calls.map((c) => String(c[0])).filter((l) => l.includes('cannot be fingerprinted'));
        expect(warnings).toHaveLength(2);
        expect(warnings[0]).toContain('not cached');
      } finally {
        spy.mockRestore();
      }
      expect(readdirSync(dir)).toEqual([]);
    }, 120_000);
  });
});
