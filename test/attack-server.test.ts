/**
 * Lying completion servers (issue 36): answers in the protocol's shape with values no model
 * produces — log-probs above 0 or not finite, null where a number is due, token ids outside
 * the vocabulary, completions longer than max_tokens, more of them than asked, a text that
 * is not what its token ids read as. Through real servers (`probe serve` behind a rewriting
 * proxy, a scripted model server, the real llama.cpp server) and the real CLI, each answer
 * must be refused in one line naming the server and the item it was for, with nothing of it
 * scored or cached; a lie cached by an older probe must not be served either.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, entryChecksum } from '../src/backends/cache-entry.ts';
import { ResultCache } from '../src/backends/cache.ts';
import { HttpBackend, type HttpBackendOptions } from '../src/backends/http/backend.ts';
import { openBackend } from '../src/backends/open.ts';
import type { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { SampleRequest, ScoreRequest } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { launchEngine, type RunningEngine } from '../src/engines/launch.ts';
import { InputError } from '../src/errors.ts';
import { scoreBpb } from '../src/probes/bpb.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { scoreMcq } from '../src/probes/mcq.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { type CliRun, runProbeAsync } from './helpers/cli.ts';
import { close, type Fault, FaultProxy, serveCheckpoint } from './helpers/http.ts';
import { GGUF, HF, LLAMA_SERVER, llamaServerPresent } from './helpers/llama-server.ts';
import { CKPT, tempDir } from './helpers/paths.ts';
import { ScriptedServer } from './helpers/scripted-server.ts';

const FAST: HttpBackendOptions = { endpoint: { retries: 1, backoffMs: 5, timeoutMs: 20_000, concurrency: 4 } };
const DEMO_SET = join(REPO_ROOT, 'probes', 'demo.jsonl');
const ITEM_ID = 'shop__pricing-1@mini:asap';
/** The md+xml item of shop__pricing-1 (four distractors, so MCQ asks it), alone in a probe set. */
const ITEM_LINE = readFileSync(DEMO_SET, 'utf8')
  .split('\n')
  .find((line) => line.includes(`"id":"${ITEM_ID}"`))!;
const ITEM = loadProbeItems(writeProbeSet())[0]!;
const SCORE: ScoreRequest = { context: ITEM.context, continuations: [ITEM.gold], label: `probe item ${ITEM_ID}` };
const SAMPLE: SampleRequest = {
  prompt: ITEM.context,
  n: 1,
  temperature: 0.7,
  topP: 0.95,
  maxTokens: 8,
  stop: ['</bash>'],
  seed: 3,
  label: `probe item ${ITEM_ID}`,
};

function writeProbeSet(): string {
  const file = join(tempDir('probe-attack-server-'), 'probes.jsonl');
  writeFileSync(file, `${ITEM_LINE}\n`);
  return file;
}

/**
 * The reported attack: a fix for shop__pricing-1 padded to 494 characters, which a server
 * ignoring max_tokens returned at --max-tokens 8 and which was executed and graded.
 */
const PADDED_FIX = (() => {
  const fix =
    "\n<bash>\nsed -i 's/return round(total - discount, 2)/return round(total * (1 - discount \\/ 100), 2)/' cart/pricing.py\n</bash>";
  const thought = 'The discount is subtracted as an absolute amount; it must be applied as a percentage of the total. ';
  return `${thought.repeat(8).slice(0, 494 - fix.length)}${fix}`;
})();

/** Every request `match`ed answered with `rewrite` applied (a persistent lie, not one fault). */
function always(rewrite: (answer: any, request: any) => any): Fault[] {
  return Array.from({ length: 10_000 }, () => ({ kind: 'rewrite' as const, rewrite }));
}
function alwaysText(rewrite: (text: string) => string): Fault[] {
  return Array.from({ length: 10_000 }, () => ({ kind: 'rewriteText' as const, rewrite }));
}

/** An echo answer's prompt log-probs (the generated token's last), each mapped. */
function promptLogprobs(map: (value: number | null, i: number) => unknown) {
  return (answer: any, request: any) => {
    if (!request?.echo) return answer;
    const lp = answer.choices[0].logprobs;
    lp.token_logprobs = lp.token_logprobs.map(map);
    return answer;
  };
}

/** A sampling answer's choices, each mapped (echo answers, which score, pass). */
function sampledChoices(map: (choice: any, request: any) => any) {
  return (answer: any, request: any) => (request?.echo ? answer : { ...answer, choices: answer.choices.map((c: any) => map(c, request)) });
}

/** The refusal a backend call must end in: an InputError naming the replica, the field and the item. */
async function expectRefused(work: Promise<unknown>, url: string, field: string | RegExp, detail: RegExp): Promise<void> {
  const failure = await work.then(
    () => undefined,
    (e) => e,
  );
  expect(failure, 'the lie was scored').toBeInstanceOf(InputError);
  expect(failure.location.file).toBe(url);
  expect(failure.location.field).toMatch(field);
  expect(failure.message).toMatch(
    new RegExp(`the answer for probe item ${ITEM_ID.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b.* is refused`),
  );
  expect(failure.message).toMatch(detail);
}

describe('a server behind a lying proxy (probe serve on the attention checkpoint)', () => {
  let served: { url: string; server: Server; backend: OnnxBackend };
  const proxies: FaultProxy[] = [];
  beforeAll(async () => {
    served = await serveCheckpoint(CKPT.attention);
  });
  afterEach(async () => {
    for (const p of proxies.splice(0)) await p.stop();
  });
  afterAll(async () => {
    await close(served.server);
    await served.backend.close();
  });

  async function lyingUrl(faults: Fault[], match: (path: string) => boolean = (path) => path === '/v1/completions'): Promise<string> {
    const proxy = new FaultProxy(served.url, faults, match);
    proxies.push(proxy);
    return proxy.start();
  }
  const open = (url: string, options: HttpBackendOptions = {}) =>
    HttpBackend.open(`${url}/v1`, { ...FAST, tokenizerDir: CKPT.attention, ...options });

  it('scores: +5 per token (BPB −7 on the old code), ±Infinity, null or a string where a log-prob is due, a top log-prob above 0 — each refused', async () => {
    const cases: Array<[string, Fault[], string, RegExp]> = [
      ['+5 per token', always(promptLogprobs((v) => (v === null ? v : 5))), 'logprobs.token_logprobs', /is 5, above 0/],
      // JSON cannot say Infinity; 1e999 parses to it.
      [
        '+Infinity',
        alwaysText((t) => t.replace(/("token_logprobs":\[null,)(-?[0-9.e-]+)/, '$11e999')),
        'logprobs.token_logprobs',
        /is Infinity, not a finite number/,
      ],
      [
        '-Infinity',
        alwaysText((t) => t.replace(/("token_logprobs":\[null,)(-?[0-9.e-]+)/, '$1-1e999')),
        'logprobs.token_logprobs',
        /is -Infinity, not a finite number/,
      ],
      ['null in the context', always(promptLogprobs((v, i) => (i === 2 ? null : v))), 'logprobs.token_logprobs', /prompt token 2 is null/],
      ['a string', always(promptLogprobs((v, i) => (i === 3 ? '-0.5' : v))), 'logprobs.token_logprobs', /prompt token 3 is "-0.5"/],
      [
        'a top log-prob above 0',
        always((answer, request) => {
          if (request?.echo) answer.choices[0].logprobs.top_logprobs[4] = { ' x': 3 };
          return answer;
        }),
        'logprobs.top_logprobs',
        /top log-prob of " x" at prompt token 4 is 3, above 0/,
      ],
    ];
    for (const [name, faults, field, detail] of cases) {
      const url = await lyingUrl(faults);
      const http = await open(url);
      await expectRefused(
        scoreBpb('lying', http, [ITEM]).then((r) => `bpb ${r.bpb} for ${name}`),
        url,
        field,
        detail,
      );
      await expectRefused(
        scoreMcq('lying', http, [ITEM], 'likelihood', 0).then((r) => `acc ${r.acc} for ${name}`),
        url,
        field,
        detail,
      );
    }
  });

  it('a log-prob of exactly 0 (a certain token) and the honest answer are scored', async () => {
    const url = await lyingUrl(always(promptLogprobs((v) => (v === null ? v : 0))));
    const [result] = await (await open(url)).score([SCORE]);
    expect(result![0]!.tokenLogprobs.every((v) => v === 0)).toBe(true);
    const honest = await (await open(served.url)).score([SCORE]);
    const local = await served.backend.score([SCORE]);
    honest[0]![0]!.tokenLogprobs.forEach((v, i) => expect(v).toBeCloseTo(local[0]![0]!.tokenLogprobs[i]!, 4));
  });

  it('samples: log-probs above 0 or null, more completions than asked, more tokens than max_tokens, a text no 8 tokens spell, a stop string kept — each refused', async () => {
    const cases: Array<[string, Fault[], string, RegExp]> = [
      [
        'a sampled log-prob of +5',
        always(sampledChoices((c) => ({ ...c, logprobs: { ...c.logprobs, token_logprobs: c.logprobs.token_logprobs.map(() => 5) } }))),
        'logprobs.token_logprobs',
        /generated token 0 is 5, above 0/,
      ],
      [
        'null for a sampled token (read as 0, "certain", on the old code)',
        always(sampledChoices((c) => ({ ...c, logprobs: { ...c.logprobs, token_logprobs: c.logprobs.token_logprobs.map(() => null) } }))),
        'logprobs.token_logprobs',
        /generated token 0 is null/,
      ],
      [
        'two completions for n = 1',
        always((a, r) => (r?.echo ? a : { ...a, choices: [a.choices[0], { ...a.choices[0], index: 1 }] })),
        'n',
        /2 completions for a request of n = 1/,
      ],
      [
        'forty tokens for max_tokens 8',
        always(sampledChoices((c) => ({ ...c, logprobs: { ...c.logprobs, token_logprobs: new Array(40).fill(-0.5) } }))),
        'max_tokens',
        /40 tokens generated for max_tokens 8/,
      ],
      [
        'a 494-character text claimed as its 8 tokens',
        always(sampledChoices((c) => ({ ...c, text: PADDED_FIX, finish_reason: 'length', stop_reason: null }))),
        'max_tokens',
        /a completion of 494 characters, which no fewer than \d+ tokens of the checkpoint spell, where the server reports \d+ generated/,
      ],
      [
        'a stop string inside a completion that ended on its length',
        always(sampledChoices((c) => ({ ...c, text: 'ls</bash>', finish_reason: 'length', stop_reason: null }))),
        'choices.text',
        /holds the stop string "<\/bash>"/,
      ],
    ];
    for (const [name, faults, field, detail] of cases) {
      const url = await lyingUrl(faults);
      await expectRefused(
        (await open(url)).sample([SAMPLE]).then((s) => `${name}: sampled ${JSON.stringify(s)}`),
        url,
        field,
        detail,
      );
    }
  });

  it('token ids from /tokenize that are no token (negative, not whole) are refused; the replica that lied is named, not the pool', async () => {
    for (const id of [-3, 2.5]) {
      const url = await lyingUrl(
        always((answer) => ({ ...answer, tokens: [...answer.tokens, id] })),
        (path) => path === '/tokenize',
      );
      const honest = `${served.url}/v1`;
      // Without --tokenizer the server tokenises; the pool holds an honest replica too, which this request may not reach.
      const http = await HttpBackend.open(`${url}/v1,${honest}`, { ...FAST, kind: 'openai', model: 'test-model' });
      const failures = await Promise.all(Array.from({ length: 4 }, () => http.score([SCORE]).catch((e) => e)));
      const refused = failures.filter((f) => f instanceof InputError);
      expect(refused.length, 'no request reached the lying replica').toBeGreaterThan(0);
      for (const f of refused) {
        expect(f.location).toEqual({ file: url, field: 'tokens' });
        expect(f.message).toContain(`/tokenize's token`);
        expect(f.message).toContain(`is ${id}, not a token id`);
      }
    }
  });

  describe('the result cache', () => {
    it('never stores a refused answer', async () => {
      const dir = tempDir('probe-attack-server-cache-');
      const url = await lyingUrl(
        always(sampledChoices((c) => ({ ...c, logprobs: { ...c.logprobs, token_logprobs: c.logprobs.token_logprobs.map(() => 5) } }))),
      );
      const backend = await openBackend(`${url}/v1`, { http: { ...FAST, tokenizerDir: CKPT.attention }, cache: new ResultCache(dir) });
      await expectRefused(backend.sample([SAMPLE]), url, 'logprobs.token_logprobs', /above 0/);
      // The canary (an honest score) is kept; no sample entry is.
      const ops = readdirSync(dir).flatMap((shard) =>
        readdirSync(join(dir, shard)).map((f) => JSON.parse(readFileSync(join(dir, shard, f), 'utf8')).key.op),
      );
      expect(ops).toEqual(['canary']);
    });

    /** An entry rewritten with a consistent checksum, as an older probe would have stored a lie. */
    function poison(dir: string, op: string, edit: (answer: any) => void): void {
      for (const shard of readdirSync(dir)) {
        for (const f of readdirSync(join(dir, shard))) {
          const file = join(dir, shard, f);
          const entry = JSON.parse(readFileSync(file, 'utf8'));
          if (entry.key.op !== op) continue;
          edit(entry.answer);
          entry.sha256 = entryChecksum(entry.key, entry.answer);
          writeFileSync(file, canonicalJson(entry));
        }
      }
    }

    it('a lie cached before the checks (+5 per token; a 494-character sample at max_tokens 8) is computed again, not served', async () => {
      const dir = tempDir('probe-attack-server-cache-');
      const cached = async () => {
        const cache = new ResultCache(dir);
        return { backend: await openBackend(`${served.url}/v1`, { http: { ...FAST, tokenizerDir: CKPT.attention }, cache }), cache };
      };
      const first = await cached();
      const truthScore = await first.backend.score([SCORE]);
      const truthSample = await first.backend.sample([SAMPLE]);
      poison(dir, 'score', (answer) => {
        answer[0].tokenLogprobs = answer[0].tokenLogprobs.map(() => 5);
      });
      poison(dir, 'sample', (answer) => {
        answer[0].text = PADDED_FIX;
        answer[0].tokens = answer[0].tokens.slice(0, 8);
        answer[0].finishReason = 'length';
        delete answer[0].stop;
      });
      const second = await cached();
      expect(await second.backend.score([SCORE])).toEqual(truthScore);
      expect(await second.backend.sample([SAMPLE])).toEqual(truthSample);
      expect(second.cache.stats).toMatchObject({ hits: 0, damaged: 2 });
    });
  });
});

describe('a scripted server ignoring max_tokens (the reported attack)', () => {
  const servers: ScriptedServer[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  it('its 494-character action at max_tokens 8 is refused, naming the server and the item', async () => {
    const server = new ScriptedServer(CKPT.attention, () => PADDED_FIX);
    servers.push(server);
    const url = (await server.start()).replace(/\/v1$/, '');
    const http = await HttpBackend.open(`${url}/v1`, { ...FAST, tokenizerDir: CKPT.attention });
    // The server cuts at the stop string, as vLLM does: 487 characters come back, the 494 less "</bash>".
    await expectRefused(http.sample([SAMPLE]), url, 'max_tokens', /a completion of 487 characters, which no fewer than \d+ tokens/);
    // The same action within a budget that can hold it is a sample like any other.
    const [fits] = await http.sample([{ ...SAMPLE, maxTokens: 400 }]);
    expect(fits![0]!.text).toBe(PADDED_FIX.slice(0, PADDED_FIX.indexOf('</bash>')));
  });
});

describe.skipIf(!llamaServerPresent)('the real llama.cpp server behind a lying proxy (s1500 GGUF, n_vocab 8192)', () => {
  let engine: RunningEngine;
  const proxies: FaultProxy[] = [];
  beforeAll(async () => {
    engine = await launchEngine(LLAMA_SERVER, { engine: 'llamacpp', path: GGUF.s1500 }, { logDir: tempDir(), name: 'lying' });
  }, 120_000);
  afterEach(async () => {
    for (const p of proxies.splice(0)) await p.stop();
  });
  afterAll(async () => {
    await engine.stop();
  });
  async function lyingUrl(faults: Fault[], match: (path: string) => boolean): Promise<string> {
    const proxy = new FaultProxy(engine.urls[0]!, faults, match);
    proxies.push(proxy);
    return proxy.start();
  }
  const completion = (map: (o: any) => any) => always((a) => (Array.isArray(a) ? a.map(map) : map(a)));
  const request = { ...SAMPLE, maxTokens: 16, stop: [] };

  it('sampled token ids outside the vocabulary, more of them than n_predict, a content they do not read as — each refused', async () => {
    const cases: Array<[string, Fault[], HttpBackendOptions, string, RegExp]> = [
      [
        'an id ≥ n_vocab',
        completion((o) => ({ ...o, tokens: [...o.tokens.slice(0, -1), 8192 + 5] })),
        {},
        'tokens',
        /is 8197, not a token id of the checkpoint \(0 to 8191\)/,
      ],
      ['a negative id', completion((o) => ({ ...o, tokens: [-1, ...o.tokens.slice(1)] })), {}, 'tokens', /is -1, not a token id/],
      [
        'an id that is not whole',
        completion((o) => ({ ...o, tokens: [1.5, ...o.tokens.slice(1)] })),
        {},
        'tokens',
        /is 1.5, not a token id/,
      ],
      [
        'three times n_predict',
        completion((o) => ({ ...o, tokens: [...o.tokens, ...o.tokens, ...o.tokens], tokens_predicted: 3 * o.tokens.length })),
        {},
        'n_predict',
        /\d+ tokens generated for max_tokens 16/,
      ],
      [
        'a content its ids do not read as',
        completion((o) => ({ ...o, content: PADDED_FIX })),
        { tokenizerDir: HF.s1500 },
        'content',
        /the text is not what its \d+ token ids read as/,
      ],
    ];
    for (const [name, faults, options, field, detail] of cases) {
      const url = await lyingUrl(faults, (path) => path === '/completion');
      const http = await HttpBackend.open(url, { ...FAST, kind: 'llamacpp', ...options });
      await expectRefused(
        http.sample([request]).then((s) => `${name}: sampled ${JSON.stringify(s)}`),
        url,
        field,
        detail,
      );
    }
  }, 120_000);

  it('a prompt /tokenize answers with an id outside the vocabulary is refused before it is sent', async () => {
    const url = await lyingUrl(
      always((a) => ({ ...a, tokens: [...a.tokens, 9000] })),
      (path) => path === '/tokenize',
    );
    const http = await HttpBackend.open(url, { ...FAST, kind: 'llamacpp' });
    await expectRefused(http.sample([request]), url, 'tokens', /is 9000, not a token id of the checkpoint \(0 to 8191\)/);
  }, 60_000);

  it('its honest samples pass (the checks refuse nothing it generates)', async () => {
    const http = await HttpBackend.open(engine.urls[0]!, { ...FAST, kind: 'llamacpp', tokenizerDir: HF.s1500 });
    const [samples] = await http.sample([{ ...request, n: 8, temperature: 1.2, stop: ['\n\n'] }]);
    expect(samples).toHaveLength(8);
  }, 60_000);
});

describe('the CLI against a lying server: one line naming the server and the item, exit 2, nothing scored', () => {
  let served: { url: string; server: Server; backend: OnnxBackend };
  const proxies: FaultProxy[] = [];
  const scripted: ScriptedServer[] = [];
  beforeAll(async () => {
    served = await serveCheckpoint(CKPT.attention);
  });
  afterEach(async () => {
    for (const p of proxies.splice(0)) await p.stop();
    await Promise.all(scripted.splice(0).map((s) => s.stop()));
  });
  afterAll(async () => {
    await close(served.server);
    await served.backend.close();
  });

  /** probe serve with every prompt log-prob of every echo answer +5: the reported BPB −7.2. */
  async function plusFive(): Promise<string> {
    const proxy = new FaultProxy(served.url, always(promptLogprobs((v) => (v === null ? v : 5))), (p) => p === '/v1/completions');
    proxies.push(proxy);
    return proxy.start();
  }

  /** The run's refusal: exit 2, the one line of stderr naming the replica, the item and the value; errors in results.json, no result. */
  function expectRefusedRun(run: CliRun, url: string, out: string | undefined, item: string, detail: RegExp): void {
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('probe: '));
    expect(run.code, run.stderr).toBe(2);
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toContain(`probe: ${url}: field "`);
    expect(lines[0]).toContain(`the answer for ${item}`);
    expect(lines[0]).toMatch(detail);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    if (out) {
      const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
      expect(results.errors).toEqual([expect.objectContaining({ file: url })]);
      expect(results.results ?? results.rows ?? []).toEqual([]);
    }
  }

  const remote = (url: string) => ['--ckpt', `${url}/v1`, '--tokenizer', CKPT.attention];

  it('probe bpb and probe mcq', async () => {
    const url = await plusFive();
    const probes = writeProbeSet();
    for (const verb of ['bpb', 'mcq']) {
      const out = join(tempDir(), verb);
      const run = await runProbeAsync([verb, ...remote(url), '--probes', probes, '--no-cache', '--out', out]);
      expectRefusedRun(run, url, out, `probe item ${ITEM_ID}`, /is 5, above 0/);
    }
  }, 120_000);

  it('probe bpb with the result cache: the canary the cache reads first is the item refused', async () => {
    const url = await plusFive();
    const run = await runProbeAsync(['bpb', ...remote(url), '--probes', writeProbeSet()], { PROBE_CACHE_DIR: tempDir() });
    expectRefusedRun(run, url, undefined, 'the result-cache canary', /is 5, above 0/);
  }, 120_000);

  it.skipIf(skipWithoutBwrap)(
    'probe passk: the 494-character fix at --max-tokens 8 is neither executed nor graded',
    async () => {
      const server = new ScriptedServer(CKPT.attention, () => PADDED_FIX);
      scripted.push(server);
      const url = (await server.start()).replace(/\/v1$/, '');
      const out = join(tempDir(), 'passk');
      const run = await runProbeAsync([
        'passk',
        ...remote(url),
        '--probes',
        writeProbeSet(),
        '-n',
        '2',
        '--max-tokens',
        '8',
        '--sandbox',
        'local',
        '--no-cache',
        '--out',
        out,
      ]);
      expectRefusedRun(
        run,
        url,
        out,
        `probe item ${ITEM_ID}`,
        /a completion of 487 characters, which no fewer than \d+ tokens .* max_tokens 8/,
      );
    },
    300_000,
  );

  it.skipIf(skipWithoutBwrap)(
    'probe screen',
    async () => {
      const url = await plusFive();
      const out = join(tempDir(), 'screen');
      const run = await runProbeAsync([
        'screen',
        ...remote(url),
        '--probes',
        writeProbeSet(),
        '-n',
        '1',
        '--asap-runs',
        '0',
        '--no-cache',
        '--out',
        out,
      ]);
      expectRefusedRun(run, url, undefined, `probe item ${ITEM_ID}`, /is 5, above 0/);
    },
    300_000,
  );
});
