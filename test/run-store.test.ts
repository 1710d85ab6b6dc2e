/**
 * The run directory: crash-safe sample logs, run.json and its checks on --resume, and a
 * scoring run killed with SIGKILL midway that resumes to the results of an uninterrupted one.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointContentHash } from '../src/backends/cache.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { runProbeKilledAfter } from './helpers/cli.ts';
import { AsapStore } from '../src/swe/store.ts';
import type { EpisodeStep } from '../src/swe/episode.ts';
import { JsonlLog, readJsonl } from '../src/store/jsonl-log.ts';
import { checkpointRecords, probeSetRecord, RunDir, type RunManifest } from '../src/store/run-dir.ts';
import { CKPT, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';
import { resolveCheckpoint } from '../src/backends/checkpoint.ts';
import { itemHooks } from '../src/pipeline/checkpoint-loop.ts';

describe('JsonlLog', () => {
  it('keeps only whole lines, and cuts a line left half-written by a kill before the next append', () => {
    const file = join(tempDir(), 'samples.jsonl');
    const log = new JsonlLog<{ n: number }>(file);
    log.append({ n: 1 });
    appendFileSync(file, '{"n": 2, "cut sh');
    expect(readJsonl(file)).toEqual([{ n: 1 }]);
    const reopened = new JsonlLog<{ n: number }>(file);
    reopened.append({ n: 3 });
    expect(readFileSync(file, 'utf8')).toBe('{"n":1}\n{"n":3}\n');
  });

  it('drops a garbled last line (a power loss) but names the file and line of a bad line with records after it', () => {
    const file = join(tempDir(), 'samples.jsonl');
    writeFileSync(file, '{"n":1}\n\u0000\u0000\u0000\n');
    expect(readJsonl(file)).toEqual([{ n: 1 }]);
    new JsonlLog<{ n: number }>(file).append({ n: 2 });
    expect(readFileSync(file, 'utf8')).toBe('{"n":1}\n{"n":2}\n');
    writeFileSync(file, '{"n":1}\nnot json\n{"n":3}\n');
    expect(() => readJsonl(file)).toThrow(InputError);
    expect(() => readJsonl(file)).toThrow(/samples\.jsonl:2: not a JSON record/);
  });

  it('reads back numbers JSON cannot hold exactly as they were', () => {
    const file = join(tempDir(), 'samples.jsonl');
    const log = new JsonlLog<{ nats: number; list: number[]; text: string }>(file);
    log.append({ nats: Infinity, list: [NaN, -Infinity, 1.5], text: 'Infinity' });
    const [back] = readJsonl<{ nats: number; list: number[]; text: string }>(file);
    expect(back!.nats).toBe(Infinity);
    expect(back!.list[0]).toBeNaN();
    expect(back!.list.slice(1)).toEqual([-Infinity, 1.5]);
    expect(back!.text).toBe('Infinity');
  });
});

describe('ASAP episode files', () => {
  it('are the same crash-safe logs: a step appended after a kill mid-line does not fuse with the cut line', () => {
    const dir = tempDir();
    const start = { type: 'start' as const, checkpoint: 'ckpt', instance: 'task-1', run: 0, seed: 7 };
    const step = (n: number): EpisodeStep => ({
      index: n,
      completion: `step ${n}`,
      finish: 'action',
      tokens: 3,
      action: { kind: 'bash', command: 'ls' },
      error: null,
      outcome: 'executed',
      observation: '',
      exitCode: 0,
      timedOut: false,
      patch: '',
      toolState: null,
      modelMs: 1,
      sandboxMs: 1,
    });
    new AsapStore(dir).startEpisode(start);
    new AsapStore(dir).appendStep(start, step(0));
    appendFileSync(new AsapStore(dir).episodeFile('ckpt', 'task-1', 0, 'jsonl'), '{"type":"step","index":1,"compl');
    // The resumed run: a new store reads the episode back and goes on from the last whole step.
    const resumed = new AsapStore(dir);
    expect(resumed.readEpisode('ckpt', 'task-1', 0).steps).toEqual([step(0)]);
    resumed.appendStep(start, step(1));
    expect(new AsapStore(dir).readEpisode('ckpt', 'task-1', 0)).toMatchObject({ start, steps: [step(0), step(1)], end: null });
  });
});

describe('RunDir', () => {
  const input = (config: Record<string, unknown>, ckpt = CKPT.agent) => ({
    verb: 'bpb',
    config,
    checkpoints: checkpointRecords([resolveCheckpoint(ckpt)]),
    probe_set: probeSetRecord('probes.jsonl', [{ id: 'a' }, { id: 'b' }]),
    seeds: { sampling: 0 },
  });

  it('records what the run was, refuses to continue without --resume, and checks the settings and checkpoints on resume', () => {
    const dir = join(tempDir(), 'run');
    const run = RunDir.open(dir, input({ n: 4 }), { resume: false, argv: ['bpb'] });
    expect(run.status).toBe('new');
    const manifest = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as RunManifest;
    expect(manifest.probe_version).toBe(JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).version);
    expect(manifest.git.commit === null || /^[0-9a-f]{40}$/.test(manifest.git.commit)).toBe(true);
    expect(manifest.checkpoints).toEqual([
      { name: CKPT.agent, path: CKPT.agent, content_hash: checkpointContentHash(CKPT.agent), control: false, heldout_code_bpb: null },
    ]);
    expect(manifest.probe_set).toMatchObject({ source: 'probes.jsonl', items: 2 });
    expect(manifest.probe_set!.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(manifest.seeds).toEqual({ sampling: 0 });

    run.memo<number>('numbers', CKPT.agent).put('a', 1.5);
    expect(() => RunDir.open(dir, input({ n: 4 }), { resume: false })).toThrow(
      /run\.json: this directory already holds a run: pass --resume/,
    );
    expect(() => RunDir.open(dir, input({ n: 8 }), { resume: true })).toThrow(
      /run\.json: field "config\.n": the run here was started with 4, this one has 8/,
    );

    // A checkpoint whose bytes changed since the run started is not the same checkpoint.
    const changed = join(tempDir(), 'ckpt');
    cpSync(CKPT.agent, changed, { recursive: true });
    const first = RunDir.open(join(tempDir(), 'run2'), input({}, changed), { resume: false });
    expect(first.status).toBe('new');
    first.memo<number>('numbers', changed).put('a', 2);
    appendFileSync(join(changed, 'config.json'), ' ');
    expect(() => RunDir.open(first.dir, input({}, changed), { resume: true })).toThrow(/field "checkpoints\..*\.content_hash"/);

    // A directory where nothing was computed yet (the run stopped on bad input) takes a new run.
    expect(RunDir.open(join(tempDir(), 'run3'), input({ n: 1 }), { resume: false }).status).toBe('new');
    const restarted = RunDir.open(join(tempDir(), 'run4'), input({ n: 1 }), { resume: false });
    expect(RunDir.open(restarted.dir, input({ n: 2 }), { resume: false }).manifest.config).toEqual({ n: 2 });

    writeFileSync(join(dir, 'results.json'), '{}');
    const resumed = RunDir.open(dir, input({ n: 4 }), { resume: true });
    expect(resumed.status).toBe('resumed');
    // The old conclusion is gone until this run writes its own.
    expect(existsSync(join(dir, 'results.json'))).toBe(false);
    expect(resumed.memo<number>('numbers', CKPT.agent).get('a')).toBe(1.5);
    // One checkpoint however it is spelled: relative to another working directory, or with ./
    expect(resumed.memo<number>('numbers', relative(process.cwd(), CKPT.agent)).get('a')).toBe(1.5);
    expect(resumed.memo<number>('numbers', `${CKPT.agent}/`).get('a')).toBe(1.5);
    expect(resumed.memo<number>('numbers', CKPT.agent).get('b')).toBeUndefined();
    expect(resumed.memo<number>('numbers', CKPT.prose).get('a')).toBeUndefined();
    expect(resumed.manifest.resumed).toHaveLength(1);
  });

  it('lets one process write a run at a time, and takes over the lock of one that died', async () => {
    const dir = join(tempDir(), 'locked');
    const bpb = (...extra: string[]) =>
      spawnSync(
        process.execPath,
        [PROBE_BIN, 'bpb', '--ckpt', CKPT.agent, '--probes', DEMO_PROBES, '--limit', '2', '--out', dir, '--json', ...extra],
        { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 },
      );
    const first = bpb();
    expect(first.status, first.stderr).toBe(0);
    expect(existsSync(join(dir, '.lock'))).toBe(false); // released at exit
    // Another live process on this host holds it.
    const holder = spawn('sleep', ['60']);
    writeFileSync(join(dir, '.lock'), JSON.stringify({ pid: holder.pid, host: hostname(), since: 'then' }));
    const refused = bpb('--resume');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`\\.lock: this run is being written by process ${holder.pid} on `));
    holder.kill('SIGKILL');
    await new Promise((resolve) => holder.once('exit', resolve));
    // Its holder is gone (as after kill -9): the lock is stale and taken over.
    const resumed = bpb('--resume');
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toEqual(JSON.parse(first.stdout));
    expect(existsSync(join(dir, '.lock'))).toBe(false);
  });
});

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 600_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe.skipIf(skipWithoutBwrap)('a scoring run killed with SIGKILL', () => {
  // Sampling, sandboxes and the verifier: the most stateful of the scoring verbs. No cache,
  // so only the run directory can carry work across the kill.
  const ARGS = [
    'passk',
    '--ckpt',
    CKPT.attention,
    CKPT.agent,
    '--probes',
    join(REPO_ROOT, 'probes', 'demo.jsonl'),
    '--limit',
    '5',
    '-n',
    '3',
    '--max-tokens',
    '256',
    '--no-cache',
  ];

  let uninterrupted: ReturnType<typeof probe>;
  let whole: string;

  /** Starts the run, and sends `signal` once `lines` items are in its log; resolves to the lines seen then. */
  async function interrupt(
    dir: string,
    signal: NodeJS.Signals,
    lines: number,
  ): Promise<{ lines: number; code: number | null; signal: NodeJS.Signals | null }> {
    const samples = join(dir, 'passk', 'samples.jsonl');
    const child = spawn(process.execPath, [PROBE_BIN, ...ARGS, '--out', dir, '--json'], { cwd: REPO_ROOT, stdio: 'ignore' });
    const seen = await new Promise<number>((resolve, reject) => {
      const poll = setInterval(() => {
        const n = existsSync(samples) ? readFileSync(samples, 'utf8').split('\n').length - 1 : 0;
        if (n >= lines) {
          clearInterval(poll);
          child.kill(signal);
          resolve(n);
        }
      }, 10);
      child.once('exit', () => {
        clearInterval(poll);
        reject(new Error('the run finished before it could be interrupted'));
      });
    });
    const [code, sig] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (c, s) => resolve([c, s])),
    );
    return { lines: seen, code, signal: sig };
  }

  it('resumes with --resume to results equal to an uninterrupted run, computing each item once', async () => {
    whole = join(tempDir(), 'whole');
    uninterrupted = probe([...ARGS, '--out', whole, '--json']);
    expect(uninterrupted.code, uninterrupted.stderr).toBe(0);

    const killed = join(tempDir(), 'killed');
    const samples = join(killed, 'passk', 'samples.jsonl');
    // Killed right after its third item was saved: exactly those three are read back.
    runProbeKilledAfter([...ARGS, '--out', killed, '--json'], 'passk/samples.jsonl:3');
    const saved = readJsonl<{ checkpoint: string; item: string }>(samples);
    expect(saved).toHaveLength(3);
    expect(existsSync(join(killed, 'results.json'))).toBe(false);

    const resumed = probe([...ARGS, '--out', killed, '--json', '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toEqual(JSON.parse(uninterrupted.stdout));
    expect(JSON.parse(readFileSync(join(killed, 'results.json'), 'utf8'))).toEqual(
      JSON.parse(readFileSync(join(whole, 'results.json'), 'utf8')),
    );
    // Finished items were read back, not computed again: one line per item × checkpoint.
    const lines = readJsonl<{ checkpoint: string; item: string }>(samples);
    expect(lines).toHaveLength(10);
    expect(lines.slice(0, 3)).toEqual(saved);
    expect(new Set(lines.map((l) => `${l.checkpoint}\t${l.item}`)).size).toBe(10);
    const manifest = JSON.parse(readFileSync(join(killed, 'run.json'), 'utf8')) as RunManifest;
    expect(manifest.verb).toBe('passk');
    expect(manifest.config).toMatchObject({ n: 3, max_tokens: 256 });
    expect(manifest.resumed).toHaveLength(1);
  }, 900_000);

  it('after Ctrl-C (SIGINT) too', async () => {
    const interrupted = join(tempDir(), 'interrupted');
    const stopped = await interrupt(interrupted, 'SIGINT', 2);
    expect(stopped.code === 130 || stopped.signal === 'SIGINT').toBe(true);
    expect(existsSync(join(interrupted, 'results.json'))).toBe(false);
    const resumed = probe([...ARGS, '--out', interrupted, '--json', '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toEqual(JSON.parse(uninterrupted.stdout));
    expect(readJsonl(join(interrupted, 'passk', 'samples.jsonl'))).toHaveLength(10);
  }, 900_000);
});

describe('itemHooks', () => {
  it('tells progress which items were read back, per item, when items finish out of order (a server takes several at once)', () => {
    const dir = RunDir.open(
      join(tempDir(), 'run'),
      { verb: 'bpb', config: {}, checkpoints: [], probe_set: probeSetRecord('p.jsonl', []), seeds: {} },
      { resume: false },
    );
    dir.memo<number>('bpb', CKPT.agent).put('old', 1);
    const ticks: Array<[string, boolean]> = [];
    let current = '';
    const hooks = itemHooks<number>(dir, 'bpb', CKPT.agent, (reused) => ticks.push([current, reused]));
    // Both items are looked up before either finishes: the old one read back, the new one computed.
    expect(hooks.memo!.get('old')).toBe(1);
    expect(hooks.memo!.get('new')).toBeUndefined();
    hooks.memo!.put('new', 2);
    for (const id of ['new', 'old']) {
      current = id;
      hooks.onItem!(id);
    }
    expect(ticks).toEqual([
      ['new', false],
      ['old', true],
    ]);
  });
});
