/**
 * `probe serve` and `probe bpb --ckpt http://…` as a user runs them: two real processes on
 * loopback; the BPB through HTTP equals the in-process BPB within 1e-4; a server that
 * cannot score prompts is refused with exit 2 and the other checkpoints' results kept.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CKPT, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';
import { checkpointKey } from '../src/swe/store.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { startProbeServe, stopProbeServe } from './helpers/probe-serve.ts';

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 180_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('probe serve', () => {
  let server: ChildProcess;
  let url = '';

  beforeAll(async () => {
    ({ url, server } = await startProbeServe(CKPT.attention));
  }, 60_000);

  afterAll(() => stopProbeServe(server));

  it('drives deep-research episodes through it (probe asap --env research), with transcripts and the documented JSON', () => {
    const out = join(tempDir(), 'research');
    const args = ['--runs', '1', '--limit', '2', '--max-steps', '3', '--max-tokens', '32', '--no-cache', '--json', '--out', out];
    const run = probe(['asap', '--env', 'research', '--ckpt', url, '--tokenizer', CKPT.attention, ...args]);
    expect(run.code, run.stderr).toBe(0);
    const [result] = JSON.parse(run.stdout).results;
    expect(result).toMatchObject({ checkpoint: url, env: 'research', runs: 1, queries: 2 });
    expect(Object.keys(result.behaviour)).toEqual([
      'searches',
      'documents_opened',
      'gold_opened',
      'gold_seen',
      'answered',
      'parsable_turns',
      'mean_turns',
    ]);
    expect(result.items.map((i: { query_id: string }) => i.query_id)).toEqual(['licenses-01', 'licenses-02']);
    const transcript = readFileSync(join(out, 'episodes', checkpointKey(url), 'licenses-01', 'run-0.md'), 'utf8');
    expect(transcript).toMatch(/^# Task\n<task>\nAnswer the question below/);
  });

  it.skipIf(skipWithoutDocker)(
    'drives Terminal-Bench episodes through it (probe asap --env terminal), with transcripts and the documented JSON',
    () => {
      const out = join(tempDir(), 'terminal');
      const args = [
        '--instances',
        'recover-lost-commit',
        '--runs',
        '1',
        '--max-steps',
        '3',
        '--max-tokens',
        '32',
        '--no-cache',
        '--pull',
        'never',
        '--json',
        '--out',
        out,
      ];
      const run = probe(['asap', '--env', 'terminal', '--ckpt', url, '--tokenizer', CKPT.attention, ...args]);
      expect(run.code, run.stderr).toBe(0);
      const doc = JSON.parse(run.stdout);
      expect(doc.tasks).toEqual([
        {
          task: 'recover-lost-commit',
          image: expect.stringMatching(/^probe-terminal:[0-9a-f]{20}$/),
          notes: ['FROM debian:bookworm-slim → probe-base:bookworm (not on this engine, and --pull never)'],
          base_images: [],
          prefix_steps: 3,
          prefix_shortened: null,
        },
      ]);
      const [result] = doc.results;
      expect(result).toMatchObject({ checkpoint: url, env: 'terminal', profile: 'terminus', runs: 1, tasks: 1 });
      expect(Object.keys(result.behaviour)).toEqual([
        'actions',
        'parsable_turns',
        'submitted',
        'failed_commands',
        'key_presses',
        'mean_turns',
      ]);
      expect(result.items).toEqual([{ task_id: 'recover-lost-commit', n: 1, c: expect.any(Number), rewards: [expect.any(Number)] }]);
      const transcript = readFileSync(join(out, 'episodes', checkpointKey(url), 'recover-lost-commit', 'run-0.md'), 'utf8');
      expect(transcript).toMatch(/^# Task\n<task>\nYou are working in a Linux terminal/);
    },
    300_000,
  );

  it('answers /v1/models, and probe bpb through it equals the in-process BPB within 1e-4', async () => {
    const models = (await (await fetch(`${url}/models`)).json()) as {
      data: Array<{ id: string; owned_by: string; max_model_len: number }>;
    };
    expect(models.data[0]).toMatchObject({ id: 'attn-agent', owned_by: 'probe', max_model_len: 8192 });
    const remote = probe(['bpb', '--ckpt', url, '--probes', DEMO_PROBES, '--json']);
    expect(remote.code, remote.stderr).toBe(0);
    const local = probe(['bpb', '--ckpt', CKPT.attention, '--probes', DEMO_PROBES, '--json']);
    const [r, l] = [JSON.parse(remote.stdout), JSON.parse(local.stdout)];
    expect(Math.abs(r.results[0].bpb - l.results[0].bpb)).toBeLessThan(1e-4);
    expect(r.results[0].items.map((i: { tokens: number }) => i.tokens)).toEqual(
      l.results[0].items.map((i: { tokens: number }) => i.tokens),
    );
  });

  it('ASAP episodes driven through the server are the episodes driven in process, step for step', () => {
    const args = ['asap', '--instances', 'shop__pricing-1', '--runs', '2', '--max-steps', '4', '--json'];
    const remote = probe([...args, '--ckpt', url, '--out', join(tempDir(), 'remote')]);
    const local = probe([...args, '--ckpt', CKPT.attention, '--out', join(tempDir(), 'local')]);
    expect(remote.code, remote.stderr).toBe(0);
    const steps = (out: string) =>
      (JSON.parse(out) as { results: Array<{ items: Array<{ runs: Array<{ transcript: string }> }> }> }).results[0]!.items[0]!.runs.map(
        (r) =>
          readFileSync(r.transcript.replace(/\.md$/, '.jsonl'), 'utf8')
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l))
            .filter((x) => x.type === 'step')
            .map((x) => [x.completion, x.tokens, x.outcome, x.observation]),
      );
    expect(steps(remote.stdout)).toEqual(steps(local.stdout));
    expect(steps(remote.stdout).flat().length).toBeGreaterThan(0);
  });

  it('a server kind that cannot score prompts is bad input (exit 2) naming the server and field; other checkpoints still scored', () => {
    const run = probe(['bpb', '--ckpt', url, CKPT.agent, '--server-kind', 'llamacpp', '--probes', DEMO_PROBES, '--json']);
    expect(run.code).toBe(2);
    const out = JSON.parse(run.stdout) as {
      results: Array<{ checkpoint: string }>;
      errors: Array<{ file: string; field: string; message: string }>;
    };
    expect(out.results.map((r) => r.checkpoint)).toEqual([CKPT.agent]);
    expect(out.errors[0]).toMatchObject({ file: url.replace(/\/v1$/, ''), field: 'echo' });
    expect(out.errors[0]!.message).toMatch(/llamacpp cannot score prompts/);
  });

  it('SIGINT cancels the requests in flight: a run against a server that never answers stops at once', async () => {
    // Connections closed by the client: counted on the socket, so a request cut off before its handler ran counts too.
    const closed: string[] = [];
    const silent = createServer(() => {});
    silent.on('connection', (socket) => socket.on('close', () => closed.push('closed')));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
    try {
      const child = spawn(
        process.execPath,
        [
          PROBE_BIN,
          'bpb',
          '--ckpt',
          silentUrl,
          '--server-kind',
          'openai',
          '--model',
          'm',
          '--tokenizer',
          CKPT.attention,
          '--probes',
          DEMO_PROBES,
          '--json',
        ],
        { cwd: REPO_ROOT, stdio: 'ignore' },
      );
      // Wait until the run has a request in flight (the server holds it forever).
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 50));
        if ((await new Promise<number>((r) => silent.getConnections((_, n) => r(n)))) > 0) break;
      }
      const started = Date.now();
      child.kill('SIGINT');
      await once(child, 'exit');
      expect(Date.now() - started).toBeLessThan(5_000);
      for (const deadline = Date.now() + 3_000; closed.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
      expect(closed.length).toBeGreaterThan(0);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('an unreachable server is a failed checkpoint (exit 1) after the retries, the others kept', () => {
    const run = probe(['bpb', '--ckpt', 'http://127.0.0.1:9/v1', CKPT.agent, '--http-retries', '1', '--probes', DEMO_PROBES, '--json']);
    expect(run.code).toBe(1);
    const out = JSON.parse(run.stdout) as { results: Array<{ checkpoint: string }>; errors: Array<{ message: string }> };
    expect(out.results.map((r) => r.checkpoint)).toEqual([CKPT.agent]);
    expect(out.errors[0]!.message).toMatch(/failed after 2 attempts/);
  });
});
