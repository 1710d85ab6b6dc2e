/**
 * `probe serve` against hostile and careless clients: no request may hang the model, crash
 * the process, fail another client's request, or be answered as if a field it sent had not
 * been there. A real server on the embedded attention checkpoint, on loopback.
 */
import type { Server } from 'node:http';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { CKPT } from './helpers/paths.ts';
import { close, serveCheckpoint } from './helpers/http.ts';

let url = '';
let server: Server;
let backend: OnnxBackend;

beforeAll(async () => {
  ({ url, server, backend } = await serveCheckpoint(CKPT.attention));
}, 60_000);
afterAll(async () => {
  await close(server);
  await backend.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}
const complete = (body: Record<string, unknown>) => post('/v1/completions', body);
const message = (answer: { json: any }) => String(answer.json.error?.message);
const health = async () => (await (await fetch(`${url}/health`)).json()) as Record<string, number>;
/** The server still answers a plain request. */
async function alive(): Promise<void> {
  const answer = await complete({ prompt: 'def add(a, b):', max_tokens: 2, temperature: 0 });
  expect(answer.status).toBe(200);
}

describe('probe serve under hostile requests', () => {
  it('150,000 stop strings are refused, and the model goes on answering', async () => {
    const answer = await complete({ prompt: 'a', max_tokens: 2, stop: Array(150_000).fill('q') });
    expect(answer.status).toBe(400);
    expect(message(answer)).toMatch(/"stop": at most 64 stop strings/);
    await alive();
  });

  it('a token-id prompt of two million ids is a 400 naming the window, not an hour of validation or a crash', async () => {
    const answer = await complete({ prompt: Array(2_000_000).fill(5), max_tokens: 1 });
    expect(answer.status).toBe(400);
    expect(message(answer)).toMatch(/"prompt": 2000000 tokens; this model's window is \d+/);
    await alive();
  });

  it("an id outside the vocabulary is that client's 400; the scoring requests batched beside it are answered", async () => {
    const good = { prompt: [5, 6, 7, 8], echo: true, max_tokens: 1, logprobs: 1, temperature: 0 };
    const answers = await Promise.all([complete(good), complete(good), complete({ ...good, prompt: [5, 6, 7, 99_999] }), complete(good)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 400, 200]);
    expect(message(answers[2]!)).toMatch(/99999 is not a token id of this model/);
    expect(answers[0]!.json.choices[0].logprobs.token_logprobs).toEqual(answers[3]!.json.choices[0].logprobs.token_logprobs);
  });

  it('what probe’s own HTTP backend sends is answered: n above 128 in one request, top_p 0', async () => {
    const many = await complete({ prompt: 'x', n: 200, max_tokens: 1, seed: 1 });
    expect(many.status).toBe(200);
    expect(many.json.choices).toHaveLength(200);
    const greedy = await complete({ prompt: 'def add(a, b):', max_tokens: 4, top_p: 0, temperature: 1, seed: 3 });
    const argmax = await complete({ prompt: 'def add(a, b):', max_tokens: 4, temperature: 0 });
    expect(greedy.status).toBe(200);
    expect(greedy.json.choices[0].text).toBe(argmax.json.choices[0].text);
  });

  it('a one-token prompt echoes (its only token has no log-prob) whether or not the greedy one-pass path serves it', async () => {
    for (const temperature of [0, 1]) {
      const answer = await complete({ prompt: [100], echo: true, max_tokens: 0, logprobs: 1, temperature });
      expect(answer.status, message(answer)).toBe(200);
      expect(answer.json.choices[0].logprobs.token_logprobs).toEqual([null]);
    }
  });

  it('top_logprobs never shows a token as the most likely where the model says otherwise, pieces of characters included', async () => {
    // Bytes of "é" and "日" as separate byte-level tokens: each alone is a piece of a character.
    const ids = [5, 195, 169, 230, 151, 165, 40, 41];
    const answer = await complete({ prompt: ids, echo: true, max_tokens: 0, logprobs: 1, temperature: 0 });
    expect(answer.status).toBe(200);
    const lp = answer.json.choices[0].logprobs;
    const scored = await backend.promptLogprobs(ids);
    for (let i = 1; i < ids.length; i++) {
      const entry = lp.top_logprobs[i] as Record<string, number>;
      // lm-evaluation-harness's greedy test: the most likely entry's key is the token's.
      const [best] = Object.entries(entry).sort((a, b) => b[1] - a[1])[0]!;
      expect(best === lp.tokens[i], `position ${i}: ${JSON.stringify(entry)} for ${lp.tokens[i]}`).toBe(
        scored.argmax![i - 1]!.token === ids[i],
      );
    }
    expect(lp.tokens.filter((t: string) => t.startsWith('bytes:\\x')).length).toBeGreaterThan(0);
    // Offsets are positions in the text: a piece of a character starts where the character does.
    expect(lp.text_offset.at(-1)).toBeLessThanOrEqual(answer.json.choices[0].text.length);
  });

  it('a client that goes away before a whole (not streamed) answer stops its rows', async () => {
    const before = await health();
    // Long enough on this small checkpoint (16 samples to the end of its window) that the client is gone well before.
    const maxTokens = backend.window - 16;
    await new Promise<void>((resolve) => {
      const req = request(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } });
      req.on('error', () => undefined);
      req.end(JSON.stringify({ prompt: 'def add(a, b):\n', max_tokens: maxTokens, n: 16, temperature: 1 }));
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 200);
    });
    let after = await health();
    for (let tries = 0; after.cancelled_requests === before.cancelled_requests && tries < 300; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await health();
    }
    expect(after.cancelled_requests).toBe(before.cancelled_requests! + 1);
    expect(after.drawn_tokens! - before.drawn_tokens!).toBeLessThan(16 * maxTokens);
    await alive();
  });

  it('names every field it does not implement, prototype names included; refuses what is not a request', async () => {
    const unknown = await complete({ prompt: 'x', max_tokens: 1, frobnicate: 1, constructor: 2, __proto__x: 3 });
    expect(message(unknown)).toBe('"frobnicate", "constructor", "__proto__x" are not implemented by probe serve; leave them out');
    const proto = await post('/v1/completions', '{"prompt":"x","max_tokens":1,"__proto__":{"n":5}}');
    expect(proto.status).toBe(400);
    expect(message(proto)).toMatch(/"__proto__" is not implemented/);
    expect((await post('/v1/completions', 'null')).status).toBe(400);
    const deep = await post('/v1/completions', `{"prompt":"x","model":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    expect(deep.status).toBe(400);
    expect(message(deep)).toMatch(/nests deeper/);
    expect(message(await complete({ prompt: 'x', max_tokens: 1, stream_options: { include_usage: true } }))).toMatch(
      /"stream_options": only with "stream": true/,
    );
    const chat = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi', name: 'eve' }], max_tokens: 1 });
    expect(message(chat)).toMatch(/"messages.0": Unrecognized key/);
    await alive();
  });
});
