/**
 * The HTTP backend against real servers on loopback: `probe serve` on an embedded
 * checkpoint (scores within 1e-4 BPB of the in-process backend, identical samples), a
 * fault-injecting proxy (dropped connections, 429, 500, truncated log-probs, ignored echo),
 * and an endpoint pool with a dead replica.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBackend } from '../src/backends/http/backend.ts';
import { EndpointFailure } from '../src/backends/http/transport.ts';
import type { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { InputError } from '../src/errors.ts';
import { scoreBpb } from '../src/probes/bpb.ts';
import { scoreMcq } from '../src/probes/mcq.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { close, FaultProxy, listen, serveCheckpoint } from './helpers/http.ts';
import { CKPT, DEMO_PROBES } from './helpers/paths.ts';
import { createServer } from 'node:http';

const items = loadProbeItems(DEMO_PROBES);
const FAST = { endpoint: { retries: 3, backoffMs: 5, timeoutMs: 20_000, concurrency: 4 } };

describe('HTTP backend against probe serve', () => {
  let served: { url: string; server: Server; backend: OnnxBackend };
  beforeAll(async () => {
    served = await serveCheckpoint(CKPT.attention);
  });
  afterAll(async () => {
    await close(served.server);
    await served.backend.close();
  });

  it('detects the server, and scores the probes within 1e-4 BPB of the in-process backend (local and server tokenisation)', async () => {
    const local = await scoreBpb('local', served.backend, items);
    for (const tokenizerDir of [CKPT.attention, undefined]) {
      const http = await HttpBackend.open(`${served.url}/v1`, { ...FAST, ...(tokenizerDir ? { tokenizerDir } : {}) });
      expect(http.kind).toBe('openai');
      expect(http.model).toBe('test-model');
      const remote = await scoreBpb('remote', http, items);
      expect(Math.abs(remote.bpb - local.bpb)).toBeLessThan(1e-4);
      remote.items.forEach((item, i) => {
        expect(item.tokens).toBe(local.items[i]!.tokens);
        expect(Math.abs(item.bpb - local.items[i]!.bpb)).toBeLessThan(1e-4);
      });
    }
  });

  it('reports greedy continuations as the in-process backend does', async () => {
    const http = await HttpBackend.open(`${served.url}/v1`, { ...FAST, tokenizerDir: CKPT.attention });
    const request = { context: items[0]!.context, continuations: [items[0]!.gold, ...items[0]!.distractors] };
    const [remote] = await http.score([request]);
    const [local] = await served.backend.score([request]);
    expect(remote!.map((r) => r.greedy)).toEqual(local!.map((r) => r.greedy));
    expect(remote!.map((r) => r.tokens)).toEqual(local!.map((r) => r.tokens));
  });

  it('samples exactly what the in-process backend samples for the same seed, with the stop string that ended each', async () => {
    const http = await HttpBackend.open(`${served.url}/v1`, { ...FAST, tokenizerDir: CKPT.attention });
    const request = { prompt: items[1]!.context, n: 3, temperature: 0.8, topP: 0.95, maxTokens: 40, stop: ['\n\n', '</bash>'], seed: 7 };
    const [remote] = await http.sample([request]);
    const [local] = await served.backend.sample([request]);
    expect(remote!.map((s) => [s.text, s.finishReason, s.stop])).toEqual(local!.map((s) => [s.text, s.finishReason, s.stop]));
    expect(remote!.map((s) => s.logprob)).toEqual(local!.map((s) => expect.closeTo(s.logprob, 4)));
  });

  describe('through a fault-injecting proxy', () => {
    it('retries dropped connections, 429 (with Retry-After) and 500, and loses no result', async () => {
      const proxy = new FaultProxy(
        served.url,
        [{ kind: 'drop' }, { kind: 'status', status: 429, retryAfter: 0 }, { kind: 'status', status: 500 }, { kind: 'drop' }],
        (p) => p === '/v1/completions',
      );
      const url = await proxy.start();
      try {
        const http = await HttpBackend.open(`${url}/v1`, {
          ...FAST,
          tokenizerDir: CKPT.attention,
          endpoint: { ...FAST.endpoint, retries: 4, concurrency: 1 },
        });
        const remote = await scoreBpb('remote', http, items.slice(0, 4));
        const local = await scoreBpb('local', served.backend, items.slice(0, 4));
        expect(Math.abs(remote.bpb - local.bpb)).toBeLessThan(1e-4);
        expect(proxy.faults).toHaveLength(0);
        // One answered request per item, plus the four that were failed on purpose.
        expect(proxy.seen.filter((s) => s.endsWith('/v1/completions')).length).toBe(4 + 4);
      } finally {
        await proxy.stop();
      }
    });

    it('a server that keeps failing is an EndpointFailure after the retries, not a wrong number', async () => {
      const proxy = new FaultProxy(
        served.url,
        Array.from({ length: 10 }, () => ({ kind: 'status' as const, status: 503 })),
        (p) => p === '/v1/completions',
      );
      const url = await proxy.start();
      try {
        const http = await HttpBackend.open(`${url}/v1`, { ...FAST, tokenizerDir: CKPT.attention });
        await expect(http.score([{ context: 'a', continuations: ['b'] }])).rejects.toThrow(EndpointFailure);
      } finally {
        await proxy.stop();
      }
    });

    it('truncated log-probs and an ignored echo fail loudly with an InputError naming the server and the field', async () => {
      const truncate = (a: any) => ({
        ...a,
        choices: [
          {
            ...a.choices[0],
            logprobs: {
              ...a.choices[0].logprobs,
              token_logprobs: a.choices[0].logprobs.token_logprobs.slice(0, 3),
              top_logprobs: a.choices[0].logprobs.top_logprobs.slice(0, 3),
            },
          },
        ],
      });
      // llama.cpp-style: echo ignored, only the generated token's log-prob comes back.
      const ignoreEcho = (a: any) => ({
        ...a,
        choices: [
          {
            ...a.choices[0],
            logprobs: {
              ...a.choices[0].logprobs,
              token_logprobs: a.choices[0].logprobs.token_logprobs.slice(-1),
              top_logprobs: a.choices[0].logprobs.top_logprobs.slice(-1),
              tokens: a.choices[0].logprobs.tokens.slice(-1),
            },
          },
        ],
      });
      for (const [rewrite, message] of [
        [truncate, /returned 3 prompt log-probs for a \d+-token prompt \(truncated\)/],
        [ignoreEcho, /the server ignored echo: 1 log-prob\(s\) for a \d+-token prompt/],
      ] as const) {
        const proxy = new FaultProxy(served.url, [{ kind: 'rewrite', rewrite }], (p) => p === '/v1/completions');
        const url = await proxy.start();
        try {
          const http = await HttpBackend.open(`${url}/v1`, { ...FAST, tokenizerDir: CKPT.attention });
          const failure = await http.score([{ context: items[0]!.context, continuations: [items[0]!.gold] }]).catch((e) => e);
          expect(failure).toBeInstanceOf(InputError);
          expect(failure.message).toMatch(message);
          expect(failure.location).toEqual({ file: url, field: 'echo' });
        } finally {
          await proxy.stop();
        }
      }
    });
  });

  it('probe serve batches concurrent scoring requests into one forward pass, with the same numbers', async () => {
    const batching = await serveCheckpoint(CKPT.attention, 100);
    try {
      const http = await HttpBackend.open(`${batching.url}/v1`, {
        ...FAST,
        tokenizerDir: CKPT.attention,
        endpoint: { ...FAST.endpoint, concurrency: 16 },
      });
      const requests = items.map((i) => ({ context: i.context, continuations: [i.gold] }));
      const remote = await Promise.all(requests.map((r) => http.score([r])));
      const local = await Promise.all(requests.map((r) => served.backend.score([r])));
      remote.forEach((r, i) =>
        r[0]![0]!.tokenLogprobs.forEach((v, j) => expect(Math.abs(v - local[i]![0]![0]!.tokenLogprobs[j]!)).toBeLessThan(1e-4)),
      );
      const health = (await (await fetch(`${batching.url}/health`)).json()) as {
        batches: number;
        batched_requests: number;
        largest_batch: number;
      };
      expect(health.batched_requests).toBe(items.length);
      expect(health.largest_batch).toBeGreaterThan(1);
      expect(health.batches).toBeLessThan(items.length);
    } finally {
      await close(batching.server);
      await batching.backend.close();
    }
  });

  it("BPB and MCQ keep the server's capacity in flight: its batches hold several items, the numbers are the in-process ones", async () => {
    const batching = await serveCheckpoint(CKPT.attention, 100);
    try {
      const http = await HttpBackend.open(`${batching.url}/v1`, {
        ...FAST,
        tokenizerDir: CKPT.attention,
        endpoint: { ...FAST.endpoint, concurrency: 8 },
      });
      expect(http.concurrency).toBe(8);
      const [remoteBpb, localBpb] = [await scoreBpb('http', http, items), await scoreBpb('local', served.backend, items)];
      expect(remoteBpb.items.map((i) => i.id)).toEqual(items.map((i) => i.id)); // the items' order, whatever order they finished in
      remoteBpb.items.forEach((item, i) => expect(Math.abs(item.bpb - localBpb.items[i]!.bpb)).toBeLessThan(1e-4));
      const bpbBatches = (await (await fetch(`${batching.url}/health`)).json()) as { batches: number; largest_batch: number };
      expect(bpbBatches.largest_batch).toBeGreaterThan(1);
      expect(bpbBatches.batches).toBeLessThan(items.length);
      const [remoteMcq, localMcq] = [
        await scoreMcq('http', http, items, 'likelihood', 0),
        await scoreMcq('local', served.backend, items, 'likelihood', 0),
      ];
      expect(remoteMcq.items.map((i) => [i.id, i.pick])).toEqual(localMcq.items.map((i) => [i.id, i.pick]));
      expect(remoteMcq.skipped).toEqual(localMcq.skipped);
    } finally {
      await close(batching.server);
      await batching.backend.close();
    }
  });

  it('a replica that failed sits out its cool-down, then gets requests again', async () => {
    const a = new FaultProxy(
      served.url,
      [
        { kind: 'status', status: 503 },
        { kind: 'status', status: 503 },
      ],
      (p) => p === '/v1/completions',
    );
    const b = new FaultProxy(served.url);
    const [ua, ub] = [await a.start(), await b.start()];
    try {
      const http = await HttpBackend.open(`${ua}/v1,${ub}/v1`, {
        kind: 'openai',
        model: 'test-model',
        tokenizerDir: CKPT.attention,
        endpoint: { retries: 1, backoffMs: 5, timeoutMs: 20_000, concurrency: 1 },
        cooldownMs: 3_000,
      });
      const count = (p: FaultProxy) => p.seen.filter((s) => s.endsWith('/v1/completions')).length;
      const one = () => http.score([{ context: items[0]!.context, continuations: [items[0]!.gold] }]);
      await one(); // a fails twice (its retry included) and is taken out; b answers
      expect([count(a), count(b)]).toEqual([2, 1]);
      await one();
      await one();
      expect(count(a)).toBe(2); // still cooling down
      await new Promise((r) => setTimeout(r, 3_100));
      await one();
      await one();
      expect(count(a)).toBeGreaterThan(2); // back in rotation
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('an endpoint pool routes around a dead replica and spreads load over live ones', async () => {
    const dead = createServer();
    const deadUrl = await listen(dead);
    await close(dead); // nothing listens there any more
    const a = new FaultProxy(served.url);
    const b = new FaultProxy(served.url);
    const [ua, ub] = [await a.start(), await b.start()];
    try {
      const http = await HttpBackend.open(`${deadUrl}/v1,${ua}/v1,${ub}/v1`, {
        kind: 'openai',
        model: 'test-model',
        tokenizerDir: CKPT.attention,
        endpoint: { retries: 1, backoffMs: 5, timeoutMs: 20_000, concurrency: 2 },
        cooldownMs: 60_000,
      });
      const remote = await scoreBpb('pool', http, items);
      const local = await scoreBpb('local', served.backend, items);
      expect(Math.abs(remote.bpb - local.bpb)).toBeLessThan(1e-4);
      const count = (p: FaultProxy) => p.seen.filter((s) => s.endsWith('/v1/completions')).length;
      expect(count(a)).toBeGreaterThan(0);
      expect(count(b)).toBeGreaterThan(0);
      expect(count(a) + count(b)).toBe(remote.items.length);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
