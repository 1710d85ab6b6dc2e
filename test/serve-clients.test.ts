/**
 * `probe serve` under the clients people already use: the official `openai` Python package
 * (from the machine's local index) drives a real server on the real llama-bpe8k-s1500
 * Hugging Face checkpoint — echo scoring equal to the HF reference, batches, n, seeds,
 * stops, streaming, chat through a chat template, and a 400 for every field not
 * implemented. Skipped where python3 cannot import `openai`, unless PROBE_REQUIRE_PY_CLIENTS
 * is set (CI installs it).
 */
import { type ChildProcess, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';
import { startProbeServe, stopProbeServe } from './helpers/probe-serve.ts';

const REAL = join(REPO_ROOT, '..', 'shared', 'models', 'hf', 'llama-bpe8k-s1500');
const REFERENCE = join(REPO_ROOT, '..', 'shared', 'models');
const CLIENTS = join(REPO_ROOT, 'test', 'fixtures', 'serve-clients');
const imports = (modules: string) => spawnSync('python3', ['-c', `import ${modules}`], { encoding: 'utf8', timeout: 120_000 }).status === 0;
const openaiClient = imports('openai');
// lm-eval 0.4.13 (--no-deps) and what its local-completions model and local tasks import.
const lmEval = imports('lm_eval.models.openai_completions, lm_eval.evaluator, datasets, tenacity');
if ((!openaiClient || !lmEval) && process.env.PROBE_REQUIRE_PY_CLIENTS)
  throw new Error(`PROBE_REQUIRE_PY_CLIENTS is set but python3 cannot import ${openaiClient ? 'lm_eval and what it needs' : 'openai'}`);

/** Six decisive actions of the shipped demo probes that fit the checkpoint's window (lm-eval would cut longer contexts its own way). */
const LM_EVAL_ITEMS = [
  'api__pagination-5@mini',
  'api__pagination-5@mini:asap',
  'cart-js__total-8@mini',
  'cart-js__total-8@mini:asap',
  'config__loader-6@mini2',
  'config__loader-6@mini2:asap',
];

function python(script: string, args: string[]): any {
  const run = spawnSync('python3', [join(CLIENTS, script), ...args], { encoding: 'utf8', timeout: 600_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

async function health(url: string): Promise<Record<string, number>> {
  return (await fetch(url.replace(/\/v1$/, '/health'))).json() as Promise<Record<string, number>>;
}

describe.skipIf(!openaiClient)('probe serve and the official openai client', () => {
  let url = '';
  let server: ChildProcess;
  beforeAll(async () => {
    ({ url, server } = await startProbeServe(REAL, ['--model', 'llama-bpe8k-s1500']));
  }, 120_000);
  afterAll(() => stopProbeServe(server));

  it('scores as lm-evaluation-harness asks (a batch of echoed prompts) to the HF reference; samples, stops, streams; refuses what it does not implement', () => {
    const reference = JSON.parse(readFileSync(join(REFERENCE, 'reference-logprobs.json'), 'utf8')).models['llama-bpe8k-s1500'].items;
    const texts = JSON.parse(readFileSync(join(REFERENCE, 'reference-items.json'), 'utf8'));
    const ids = Object.keys(reference)
      .filter((id) => reference[id].clean_boundary && texts[id])
      .slice(0, 4);
    const items = join(tempDir(), 'items.json');
    writeFileSync(items, JSON.stringify(Object.fromEntries(ids.map((id) => [id, { context: texts[id].context, gold: texts[id].gold }]))));
    const got = python('openai_client.py', [url, 'llama-bpe8k-s1500', items]);

    // Echo: one request of four token-id prompts, choices in prompt order, each continuation's nats as HF computes them.
    expect(got.echo.indexes).toEqual([0, 1, 2, 3]);
    expect(got.echo.first_logprob).toEqual([null, null, null, null]);
    expect(got.echo.top_has_token).toBe(true);
    for (const id of ids) {
      expect(Math.abs(got.echo.nats[id] - reference[id].nats_nobos), id).toBeLessThan(1e-4);
      expect(got.echo_single_nats[id]).toBe(got.echo.nats[id]);
    }

    // Two prompts × n=3: prompt-major choices; a seed draws the same samples again, another seed others.
    expect(got.sampling.indexes).toEqual([0, 1, 2, 3, 4, 5]);
    expect(got.sampling.same_seed_same).toBe(true);
    expect(got.sampling.other_seed_differs).toBe(true);
    expect(got.sampling.usage.completion_tokens).toBeGreaterThan(6);
    for (const choice of got.stop) {
      expect(choice.text).not.toMatch(/\n|return/);
      if (choice.finish_reason === 'stop') expect(['\n', 'return']).toContain(choice.stop_reason);
    }
    expect(got.stop.some((c: { finish_reason: string }) => c.finish_reason === 'stop')).toBe(true);

    // A stream is the same answer in pieces: text, tokens and log-probs of every choice, finish reasons, usage.
    expect(got.stream.streamed).toHaveLength(4);
    got.stream.whole.forEach((whole: any, i: number) => {
      const streamed = got.stream.streamed[i];
      expect(streamed.text).toBe(whole.text);
      expect(streamed.tokens).toEqual(whole.tokens);
      expect(streamed.logprobs).toEqual(whole.logprobs);
      expect(streamed.finish_reason).toBe(whole.finish_reason);
      expect(streamed.events).toBeGreaterThan(1);
    });
    expect(got.stream.usage).toEqual(got.stream.whole_usage);
    expect(got.stream_echo.startsWith('def add(a, b):\n')).toBe(true);

    expect(got.refused.frobnicate).toMatch(/"frobnicate" is not implemented/);
    expect(got.refused.presence_penalty).toMatch(/"presence_penalty": only 0/);
    expect(got.refused.logprobs).toMatch(/"logprobs": at most 1/);
    expect(got.refused.neutral_penalty).toBeNull();
    expect(got.chat).toMatch(/base model with no chat template/);
  }, 600_000);

  it.skipIf(!lmEval)(
    "lm-evaluation-harness's local-completions: its log-likelihoods are probe bpb's nats, its generations honour their stops, at batch sizes 1 and 8",
    () => {
      const dir = tempDir();
      const rows = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
        .split('\n')
        .filter((line) => line && LM_EVAL_ITEMS.includes(JSON.parse(line).id));
      expect(rows).toHaveLength(6);
      writeFileSync(join(dir, 'probes.jsonl'), `${rows.join('\n')}\n`);
      writeFileSync(
        join(dir, 'items.jsonl'),
        rows.map((line) => JSON.stringify((({ id, context, gold }) => ({ id, context, gold }))(JSON.parse(line)))).join('\n'),
      );
      // probe in process, without a BOS (lm-eval's default), on the same items and checkpoint.
      const bpb = spawnSync(
        process.execPath,
        [PROBE_BIN, 'bpb', '--ckpt', REAL, '--probes', join(dir, 'probes.jsonl'), '--bos', 'never', '--no-cache', '--json'],
        { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 },
      );
      expect(bpb.status, bpb.stderr).toBe(0);
      const nats = Object.fromEntries(
        JSON.parse(bpb.stdout).results[0].items.map((i: { id: string; nats: number }) => [i.id, i.nats]),
      ) as Record<string, number>;
      for (const batch of ['1', '8']) {
        const got = python('lm_eval_run.py', [`${url}/completions`, 'llama-bpe8k-s1500', REAL, join(dir, 'items.jsonl'), batch]);
        for (const id of LM_EVAL_ITEMS)
          expect(Math.abs(-got.probe_decisive[id][0] - nats[id]!), `${id} at batch ${batch}`).toBeLessThan(1e-4);
        const generations = Object.values(got.probe_generate) as string[];
        expect(generations).toHaveLength(6);
        for (const text of generations) expect(text).not.toMatch(/\n\n|<\//);
        expect(generations.some((text) => text.length > 0)).toBe(true);
      }
    },
    900_000,
  );

  it('a client that goes away mid-stream stops its rows: the model draws no more for it', async () => {
    const before = await health(url);
    const body = JSON.stringify({ prompt: 'def add(a, b):\n', max_tokens: 400, n: 2, temperature: 1, seed: 1, stream: true });
    await new Promise<void>((resolve, reject) => {
      const req = request(`${url}/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
      req.end(body);
    });
    let after = await health(url);
    for (let tries = 0; after.cancelled_requests === before.cancelled_requests && tries < 600; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await health(url);
    }
    expect(after.cancelled_requests).toBe(before.cancelled_requests! + 1);
    expect(after.drawn_tokens! - before.drawn_tokens!).toBeLessThan(2 * 400);
    // The server goes on answering.
    const next = await fetch(`${url}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x', max_tokens: 2 }),
    });
    expect(next.status).toBe(200);
  }, 120_000);
});

describe.skipIf(!openaiClient)('probe serve on a checkpoint with a chat template, and the openai chat API', () => {
  const TEMPLATE =
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";
  let url = '';
  let server: ChildProcess;
  beforeAll(async () => {
    // The real checkpoint with a chat template added to its tokenizer_config.json; its other files linked.
    const dir = join(tempDir(), 'chat-model');
    mkdirSync(dir);
    for (const file of readdirSync(REAL)) if (file !== 'tokenizer_config.json') symlinkSync(join(REAL, file), join(dir, file));
    const config = JSON.parse(readFileSync(join(REAL, 'tokenizer_config.json'), 'utf8'));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: TEMPLATE }));
    ({ url, server } = await startProbeServe(dir, ['--model', 'chat-model']));
  }, 120_000);
  afterAll(() => stopProbeServe(server));

  it('answers through the template: the completion of the rendered conversation, whole or streamed, with log-probs', () => {
    const rendered = '<|system|>\nYou write Python.\n<|user|>\nAdd two numbers.\n<|assistant|>\n';
    const got = python('openai_chat.py', [url, 'chat-model', rendered]);
    expect(got.whole).toHaveLength(2);
    got.whole.forEach((whole: any, i: number) => {
      expect(whole.role).toBe('assistant');
      expect(whole.content).toBe(got.completion[i].text);
      expect(whole.finish_reason).toBe(got.completion[i].finish_reason);
      expect(got.streamed[i]).toEqual({ role: 'assistant', content: whole.content, finish_reason: whole.finish_reason });
      expect(whole.top.every((n: number) => n === 1)).toBe(true);
      expect(whole.logprobs.every((lp: number) => lp <= 0)).toBe(true);
    });
    expect(got.usage.prompt_tokens).toBe(got.prompt_tokens);
  }, 300_000);
});
