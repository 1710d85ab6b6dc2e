/**
 * The real llama.cpp server (../shared/tools/llama.cpp/llama-server) on the GGUF ladder:
 * samples are what the server generated (a stop string kept only where the server says it
 * matched), the sampler is the one probe states, `n` is split to the server's slots, a
 * sample the server cannot return costs only itself, refusals name the field the server
 * ignored, and `--ckpt FILE.gguf` is served for the run by a llama-server probe starts and
 * stops. Each of these failed on the code before it (an appended fence, HTTP 500, HTTP 400).
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBackend } from '../src/backends/http/backend.ts';
import type { Sample, SampleRequest } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { launchEngine, type RunningEngine } from '../src/engines/launch.ts';
import { GGUF, HF, LLAMA_SERVER, llamaServerPresent } from './helpers/llama-server.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';

const skip = !llamaServerPresent;
const SLOTS = 4;
/** A prompt after which this model often writes bytes that are not UTF-8 (llama.cpp then answers HTTP 500). */
const UNICODE_PROMPT = "# 日本語のコメント\n# Ünïcödé ✓ 😀\nprint('";

function probe(args: string[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, PROBE_LLAMA_SERVER: LLAMA_SERVER, ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const DEMO_SET = join(REPO_ROOT, 'probes', 'demo.jsonl');

/** `probe passk` on the first `limit` demo items (all without), n samples of up to `maxTokens`, uncached, into `out`. */
function passkArgs(ckpt: string, o: { out: string; n: number; maxTokens: number; limit?: number }): string[] {
  return [
    'passk',
    '--ckpt',
    ckpt,
    '--probes',
    DEMO_SET,
    ...(o.limit ? ['--limit', String(o.limit)] : []),
    '-n',
    String(o.n),
    '--max-tokens',
    String(o.maxTokens),
    '--no-cache',
    '--out',
    o.out,
  ];
}

/** llama-server processes serving `file` (none may outlive the run that started them). */
function serversOf(file: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).stdout;
  return ps.split('\n').filter((line) => line.includes('llama-server') && line.includes(file));
}

interface Exchange {
  path: string;
  request: Record<string, any>;
  status: number;
  answer: any;
}

/** A pass-through proxy in front of the server that keeps every /completion exchange: what the server itself answered. */
async function recordingProxy(target: string): Promise<{ url: string; exchanges: Exchange[]; server: Server }> {
  const exchanges: Exchange[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const upstream = await fetch(`${target}${req.url}`, {
      method: req.method,
      headers: { 'content-type': 'application/json' },
      ...(body ? { body } : {}),
    });
    const text = await upstream.text();
    if (req.url === '/completion') {
      let answer: unknown = text;
      try {
        answer = JSON.parse(text);
      } catch {
        // kept as text
      }
      exchanges.push({ path: req.url, request: JSON.parse(body), status: upstream.status, answer });
    }
    res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exchanges, server };
}

/** The server's own answers for one sample request: each sample by index (request seed − base seed + child index). */
function generated(
  exchanges: Exchange[],
  seed: number,
): Map<number, { status: number; content?: string; stopType?: string; stoppingWord?: string }> {
  const byIndex = new Map<number, { status: number; content?: string; stopType?: string; stoppingWord?: string }>();
  for (const e of exchanges) {
    const first = e.request.seed - seed;
    if (e.status !== 200) {
      if (e.request.n === 1) byIndex.set(first, { status: e.status });
      continue;
    }
    const outs = (Array.isArray(e.answer) ? e.answer : [e.answer]) as Array<{
      index?: number;
      content: string;
      stop_type: string;
      stopping_word: string;
    }>;
    for (const o of outs)
      byIndex.set(first + (o.index ?? 0), { status: 200, content: o.content, stopType: o.stop_type, stoppingWord: o.stopping_word });
  }
  return byIndex;
}

describe.skipIf(skip)('real llama.cpp server', () => {
  let engine: RunningEngine;
  let backend: HttpBackend;
  let url: string;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;

  beforeAll(async () => {
    process.env.PROBE_LLAMA_SLOTS = String(SLOTS);
    engine = await launchEngine(LLAMA_SERVER, { engine: 'llamacpp', path: GGUF.s1500 }, { logDir: tempDir(), name: 's1500' });
    delete process.env.PROBE_LLAMA_SLOTS;
    url = engine.urls[0]!;
    proxy = await recordingProxy(url);
    backend = await HttpBackend.open(proxy.url);
  }, 120_000);
  afterAll(async () => {
    proxy?.server.close();
    await engine?.stop();
  });

  /** Samples `request` through the proxy; returns them with what the server answered for each. */
  async function sampleRecorded(request: SampleRequest) {
    proxy.exchanges.length = 0;
    const [samples] = await backend.sample([request]);
    return { samples: samples!, answers: generated(proxy.exchanges, request.seed), exchanges: [...proxy.exchanges] };
  }

  function expectSameAs(sample: Sample, want: { status: number; content?: string; stopType?: string; stoppingWord?: string } | undefined) {
    expect(want?.status).toBe(200);
    expect(sample.text).toBe(want!.content);
    expect(sample.finishReason).toBe({ eos: 'eos', limit: 'length', word: 'stop' }[want!.stopType!]);
    if (want!.stopType === 'word') expect(sample.stop).toBe(want!.stoppingWord);
    else expect(sample.stop).toBeUndefined();
  }

  it('samples are what the server generated: a stop string only where the server says one matched, never after an end of text', async () => {
    const request: SampleRequest = {
      prompt: 'def add(a, b):\n    return a + b\n',
      n: SLOTS,
      temperature: 1,
      topP: 1,
      maxTokens: 96,
      stop: ['\n```'], // one stop string: where the old reading took every "stop" for it
      seed: 0,
    };
    const { samples, answers, exchanges } = await sampleRecorded(request);
    expect(samples).toHaveLength(SLOTS);
    expect(exchanges).toHaveLength(1); // n within the slots: one request
    for (const [i, sample] of samples.entries()) expectSameAs(sample, answers.get(i));
    // The case that went wrong: the server ends on EOS with finish_reason "stop"; no fence is appended to those.
    const eos = samples.filter((s) => s.finishReason === 'eos');
    expect(eos.length).toBeGreaterThan(0);
    for (const s of eos) expect(s.stop).toBeUndefined();
  }, 60_000);

  it('asks for the distribution probe states (top-k and min-p off, nothing else in the chain) and records it', async () => {
    await backend.sample([{ prompt: 'x = ', n: 1, temperature: 0.7, topP: 0.95, maxTokens: 4, stop: [], seed: 3 }]);
    const slots = (await (await fetch(`${url}/slots`)).json()) as Array<{ params?: Record<string, unknown> }>;
    const used = slots.map((s) => s.params).find((p) => p && p.seed === 3);
    expect(used, JSON.stringify(slots).slice(0, 500)).toBeDefined();
    expect(used!.samplers).toEqual(['temperature', 'top_k', 'top_p']);
    expect(used!.top_k).toBe(0);
    expect(used!.min_p).toBe(0);
    expect(used!.top_p).toBeCloseTo(0.95, 6);
    expect(used!.temperature).toBeCloseTo(0.7, 6);
    expect(await backend.samplerSettings({ temperature: 0.7, topP: 0.95 })).toMatchObject({
      top_k: 0,
      min_p: 0,
      samplers: ['temperature', 'top_k', 'top_p'],
    });
  }, 30_000);

  it(`n above the server's ${SLOTS} slots is split, part by part seeded as the server seeds one request's samples`, async () => {
    const request: SampleRequest = {
      prompt: 'import os\n',
      n: 3 * SLOTS + 1,
      temperature: 1,
      topP: 1,
      maxTokens: 24,
      stop: ['\n\n'],
      seed: 11,
    };
    const { samples, answers, exchanges } = await sampleRecorded(request);
    expect(samples).toHaveLength(request.n);
    expect(exchanges.map((e) => [e.request.n, e.request.seed])).toEqual(
      expect.arrayContaining([
        [SLOTS, 11],
        [SLOTS, 11 + SLOTS],
        [SLOTS, 11 + 2 * SLOTS],
        [1, 11 + 3 * SLOTS],
      ]),
    );
    expect(exchanges.every((e) => e.status === 200 && e.request.n <= SLOTS)).toBe(true);
    for (const [i, sample] of samples.entries()) expectSameAs(sample, answers.get(i));
  }, 60_000);

  it('a sample the server cannot return (not UTF-8: HTTP 500) costs only itself, and says why', async () => {
    const request: SampleRequest = { prompt: UNICODE_PROMPT, n: 8, temperature: 1.5, topP: 1, maxTokens: 200, stop: ['\n\n'], seed: 1 };
    const { samples, answers, exchanges } = await sampleRecorded(request);
    expect(samples).toHaveLength(8);
    expect(exchanges[0]!.status).toBe(500); // the whole request first (what lost the item before)
    const failed = samples.flatMap((s, i) => (s.finishReason === 'error' ? [i] : []));
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.length).toBeLessThan(8);
    for (const [i, sample] of samples.entries()) {
      if (failed.includes(i)) {
        expect(answers.get(i)?.status).toBe(500); // asked for alone, the server failed it too: nothing probe could have had
        expect(sample.text).toBe('');
        expect(sample.error).toMatch(new RegExp(`sample ${i} \\(seed ${1 + i}\\).*does not match the expected`));
      } else expectSameAs(sample, answers.get(i));
    }
  }, 120_000);

  it('scoring is refused naming echo, the field the server ignored (also as --server-kind openai)', async () => {
    await expect(backend.score([{ context: 'a = 1\n', continuations: ['b = 2\n'] }])).rejects.toThrow(
      /field "echo".*llamacpp cannot score prompts/,
    );
    const openai = await HttpBackend.open(url, { kind: 'openai', tokenizerDir: HF.s1500 });
    await expect(openai.score([{ context: 'a = 1\n', continuations: ['b = 2\n'] }])).rejects.toThrow(/field "echo".*ignored echo/);
  }, 30_000);
});

describe.skipIf(skip)('--ckpt FILE.gguf: served for the run by a llama-server probe starts', () => {
  it('probe passk runs through it on n above the slots, records the sampler and the engine log, and leaves no server behind', () => {
    const out = join(tempDir(), 'passk');
    const run = probe([...passkArgs(GGUF.s250, { out, limit: 2, n: 6, maxTokens: 64 }), '--json'], { PROBE_LLAMA_SLOTS: '4' });
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout).results[0];
    expect(result.backend).toMatch(/^http:llamacpp:/);
    expect(result.items.map((i: { n: number }) => i.n)).toEqual([6, 6]);
    expect(result.sampler).toMatchObject({ engine: 'llama.cpp /completion', top_k: 0, min_p: 0, temperature: 0.7, top_p: 0.95 });
    const logs = readdirSync(join(out, 'engines'));
    expect(logs).toHaveLength(1);
    expect(readFileSync(join(out, 'engines', logs[0]!), 'utf8')).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(serversOf(GGUF.s250)).toEqual([]);
  }, 300_000);

  it('probe asap runs whole episodes through it', () => {
    const out = join(tempDir(), 'asap');
    const run = probe([
      'asap',
      '--ckpt',
      GGUF.s40,
      '--instances',
      'stats__median-7',
      '--runs',
      '2',
      '--max-steps',
      '3',
      '--max-tokens',
      '128',
      '--no-cache',
      '--out',
      out,
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout).results[0];
    expect(result.checkpoint).toBe(GGUF.s40);
    expect(result.sampler).toMatchObject({
      engine: 'llama.cpp /completion',
      top_k: 0,
      min_p: 0,
      samplers: ['temperature', 'top_k', 'top_p'],
    });
    expect(result.runs).toBe(2);
    expect(existsSync(join(out, 'engines'))).toBe(true);
    expect(serversOf(GGUF.s40)).toEqual([]);
  }, 300_000);

  it('Ctrl-C during the run stops the server it started', async () => {
    const out = join(tempDir(), 'interrupted');
    const child = spawn(process.execPath, [PROBE_BIN, ...passkArgs(GGUF.s40, { out, n: 16, maxTokens: 1024 })], {
      cwd: REPO_ROOT,
      env: { ...process.env, PROBE_LLAMA_SERVER: LLAMA_SERVER },
      stdio: 'ignore',
    });
    const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
    for (let i = 0; i < 600 && serversOf(GGUF.s40).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(serversOf(GGUF.s40)).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 1000)); // sampling under way
    child.kill('SIGINT');
    expect(['SIGINT', '130']).toContain(await exited); // ended as a killed process does
    expect(serversOf(GGUF.s40)).toEqual([]);
  }, 120_000);

  it('probe bpb is refused before any work in one line: llama.cpp returns no prompt log-probs', () => {
    const run = probe(['bpb', '--ckpt', GGUF.s1500, '--limit', '1']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /llama-bpe8k-s1500-f32\.gguf: this probe scores prompts, and llama\.cpp's llama-server returns no prompt log-probs/,
    );
  });

  it('without llama-server anywhere, one line says what would serve it', () => {
    const run = probe(['passk', '--ckpt', GGUF.s1500, '--probes', DEMO_SET, '--limit', '1'], {
      PROBE_LLAMA_SERVER: '',
      PATH: '/usr/bin:/bin',
    });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/not on PATH.*llama-server -m .*-no-kvu.*--ckpt http:\/\/127\.0\.0\.1:8080/);
  });
});

describe('--ckpt DIR of a Hugging Face checkpoint (safetensors, no onnx/) with --engine vllm', () => {
  // No vLLM installs on these machines (not in the package mirrors): a stand-in `vllm` on PATH takes
  // vLLM's command line and serves the same weights' ONNX export with probe serve, so what is tested
  // here is probe's side — the command, one replica per GPU, readiness, logs, stop — not vLLM.
  it.skipIf(!existsSync(HF.s1500))(
    'with vllm on PATH: one replica per GPU in CUDA_VISIBLE_DEVICES, used for the run and stopped after it',
    () => {
      const bin = tempDir();
      const seen = join(bin, 'seen.log');
      const onnx = join(REPO_ROOT, '..', 'shared', 'models', 'llama-bpe8k-s1500');
      writeFileSync(
        join(bin, 'vllm'),
        `#!/bin/bash
[ "$1" = serve ] || exit 64
dir=$2; shift 2; args="$*"
while [ $# -gt 0 ]; do case $1 in --port) port=$2; shift 2;; *) shift;; esac; done
echo "gpu=$CUDA_VISIBLE_DEVICES dir=$dir args=$args" >> ${JSON.stringify(seen)}
exec ${JSON.stringify(process.execPath)} ${JSON.stringify(PROBE_BIN)} serve --ckpt ${JSON.stringify(onnx)} --port "$port"
`,
      );
      chmodSync(join(bin, 'vllm'), 0o755);
      const out = join(tempDir(), 'hf');
      const run = probe([...passkArgs(HF.s1500, { out, limit: 2, n: 2, maxTokens: 32 }), '--engine', 'vllm', '--json'], {
        PATH: `${bin}:${process.env.PATH}`,
        CUDA_VISIBLE_DEVICES: '0,1',
      });
      expect(run.code, run.stderr).toBe(0);
      const lines = readFileSync(seen, 'utf8').trim().split('\n');
      expect(lines.map((l) => l.split(' ')[0]).sort()).toEqual(['gpu=0', 'gpu=1']);
      for (const line of lines) expect(line).toContain(`dir=${HF.s1500} args=--host 127.0.0.1 --port`);
      const result = JSON.parse(run.stdout).results[0];
      expect(result.backend).toMatch(/^http:vllm:.*@http:\/\/127\.0\.0\.1:\d+,http:\/\/127\.0\.0\.1:\d+$/);
      expect(result.items.map((i: { n: number }) => i.n)).toEqual([2, 2]);
      expect(readdirSync(join(out, 'engines'))).toHaveLength(2);
      const manifest = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8'));
      expect(manifest.config.engine).toBe('vllm');
      expect(manifest.checkpoints[0].engine).toMatch(
        /^vLLM at http:\/\/127\.0\.0\.1:\d+, http:\/\/127\.0\.0\.1:\d+ \(started by probe for the run\)$/,
      );
      const left = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter((l) => l.includes(`serve --ckpt ${onnx}`));
      expect(left).toEqual([]);
      // --engine auto takes vLLM only where the machine also has an NVIDIA GPU: here, with vllm on PATH, as --engine says.
      const autoOut = join(tempDir(), 'auto');
      const auto = probe(['bpb', '--ckpt', HF.s1500, '--limit', '1', '--no-cache', '--out', autoOut], {
        PATH: `${bin}:${process.env.PATH}`,
      });
      expect(auto.code, auto.stderr).toBe(0);
      expect(JSON.parse(readFileSync(join(autoOut, 'run.json'), 'utf8')).checkpoints[0].engine).toMatch(
        existsSync('/dev/nvidiactl') ? /^vLLM at / : /^probe in process \(onnxruntime\)/,
      );
    },
    300_000,
  );

  it.skipIf(!existsSync(HF.s1500))('without vllm on PATH, one line says which command would serve it, or to run it in process', () => {
    const run = probe(['bpb', '--ckpt', HF.s1500, '--limit', '1', '--engine', 'vllm'], { PATH: '/usr/bin:/bin' });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /--engine vllm .*vLLM, which is not on PATH.*vllm serve .*llama-bpe8k-s1500 --port 8000.*--engine in-process/,
    );
  });

  it.skipIf(!existsSync(HF.s1500))('with no vLLM (auto), it runs in process, and run.json says which engine ran', () => {
    const out = join(tempDir(), 'auto');
    const run = probe(['bpb', '--ckpt', HF.s1500, '--limit', '2', '--no-cache', '--out', out], { PATH: '/usr/bin:/bin' });
    expect(run.code, run.stderr).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8'));
    expect(manifest.config.engine).toBeUndefined();
    expect(manifest.checkpoints[0].engine).toBe('probe in process (onnxruntime): Llama graph built from model.safetensors');
  });
});
