/**
 * `probe watch --slurm` on a real one-node Slurm (scripts/start-slurm.sh): the agentic
 * ladder's checkpoints land one by one in a watched directory, each is scored by Slurm jobs,
 * a job cancelled mid-run (scancel) is submitted again and its checkpoint rescored, the
 * watch SIGKILLed while a job runs is resumed without submitting any job twice for
 * finished work, and the scores equal a `probe watch --once` in one process.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { cancelJob, jobStates } from '../src/slurm/jobs.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { runProbe } from './helpers/cli.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';
import { skipWithoutSlurm, waitForEnd } from './helpers/slurm.ts';

const LADDER = join(REPO_ROOT, '..', 'shared', 'agentic-ladder');
const ORDER = ['agentmix-mix25-s100', 'agentmix-mix25-s250', 'agentmix-mix25-s500'];

interface JobLine {
  event: 'submitted' | 'ended';
  entry?: string;
  key: string;
  stage: 'cheap' | 'heavy';
  job: string;
  attempt?: number;
  state?: string;
  outcome?: string;
  dir?: string;
}

const lines = <T>(file: string): T[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as T)
    : [];
const name = (path: string) => path.split('/').at(-1)!;

function startWatch(args: string[], env: Record<string, string> = {}): { child: ChildProcess; log: () => string; ended: Promise<void> } {
  const child = spawn(process.execPath, [PROBE_BIN, 'watch', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stderr!.on('data', (d) => (text += d));
  child.stdout!.on('data', (d) => (text += d));
  const ended = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return { child, log: () => text, ended };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, log: () => string, timeoutMs = 240_000): Promise<void> {
  const started = Date.now();
  while (!(await ok())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(skipWithoutSlurm || skipWithoutBwrap)('probe watch --slurm on a real Slurm cluster', () => {
  it("scores each landing checkpoint in Slurm jobs; a cancelled job is rescored; a killed watch resumes without resubmitting; the scores are the one-process watch's", async () => {
    const root = tempDir();
    const watched = join(root, 'ckpts');
    const run = join(root, 'slurm-watch');
    mkdirSync(watched);
    const rungs = [
      '--probes',
      join(REPO_ROOT, 'probes', 'demo.jsonl'),
      '--limit',
      '3',
      '--code',
      join(REPO_ROOT, 'verifiers', 'api__pagination-5'),
      '-n',
      '4',
      '--passk-max-tokens',
      '64',
      '--asap-runs',
      '0',
      '--every',
      '2',
      '--move',
      'off',
      '--no-cache',
    ];
    const args = [
      watched,
      '--out',
      run,
      '--settle',
      '0.5',
      '--poll',
      '0.5',
      ...rungs,
      '--slurm',
      '--sbatch=--comment=probe-watch-test',
      '--sbatch=--time=20',
    ];
    const jobs = () => lines<JobLine>(join(run, 'slurm.jsonl'));
    const scored = (entry: string) =>
      lines<{ event: string; entry: string }>(join(run, 'watch.jsonl')).some((e) => e.event === 'scored' && name(e.entry) === entry);
    const land = (entry: string) => cpSync(join(LADDER, entry), join(watched, entry), { recursive: true });

    // The first watch SIGKILLs itself right after its 7th line of slurm.jsonl: the second
    // checkpoint's cheap job submitted (s100: cheap, collected, heavy, cancelled, heavy again, collected; s250: submitted).
    const first = startWatch(args, { PROBE_TEST_KILL_AFTER_APPENDS: 'slurm.jsonl:7' });
    land(ORDER[0]!);
    // s100 is the first of its run: pass@K too. Its pass@K job is cancelled once it has sampled an item.
    await until('the pass@K job running', () => jobs().some((j) => j.event === 'submitted' && j.stage === 'heavy'), first.log);
    const heavy = jobs().find((j) => j.event === 'submitted' && j.stage === 'heavy')!;
    await until('a sample written by the pass@K job', () => lines(join(heavy.dir!, 'passk', 'samples.jsonl')).length > 0, first.log);
    const before = (await jobStates([heavy.job])).get(heavy.job)!;
    expect(before.known && before.state, 'the job was to be cancelled while running').toBe('RUNNING');
    await cancelJob(heavy.job);
    await until(`${ORDER[0]} scored after its job was cancelled`, () => scored(ORDER[0]!), first.log);
    land(ORDER[1]!);
    await first.ended;
    expect(first.child.signalCode, first.log()).toBe('SIGKILL');
    const cheap250 = jobs().at(-1)!;
    expect([cheap250.event, name(cheap250.entry!), cheap250.stage]).toEqual(['submitted', ORDER[1], 'cheap']);
    // The job finishes while no watch is there to see it.
    const end = await waitForEnd(cheap250.job, 120_000);
    expect(end.known && end.state).toBe('COMPLETED');

    const second = startWatch(args);
    await until(`${ORDER[1]} collected after the restart`, () => scored(ORDER[1]!), second.log);
    land(ORDER[2]!);
    await until(`${ORDER[2]} scored`, () => scored(ORDER[2]!), second.log);
    second.child.kill('SIGTERM');
    await second.ended;
    expect(second.log()).toMatch(/Resuming the watch/);

    // Every job: one cheap per checkpoint, pass@K for the 1st and 3rd (every 2nd), the cancelled one once more.
    const submitted = jobs()
      .filter((j) => j.event === 'submitted')
      .map((j) => [name(j.entry!), j.stage, j.attempt]);
    expect(submitted).toEqual([
      [ORDER[0], 'cheap', 1],
      [ORDER[0], 'heavy', 1],
      [ORDER[0], 'heavy', 2],
      [ORDER[1], 'cheap', 1],
      [ORDER[2], 'cheap', 1],
      [ORDER[2], 'heavy', 1],
    ]);
    expect(
      jobs()
        .filter((j) => j.event === 'ended')
        .map((j) => [j.stage, j.state, j.outcome]),
    ).toEqual([
      ['cheap', 'COMPLETED', 'collected'],
      ['heavy', 'CANCELLED', 'retried'],
      ['heavy', 'COMPLETED', 'collected'],
      ['cheap', 'COMPLETED', 'collected'],
      ['cheap', 'COMPLETED', 'collected'],
      ['heavy', 'COMPLETED', 'collected'],
    ]);
    // The user's sbatch options reached the jobs (scontrol still knows the last one).
    const last = jobs().at(-1)!;
    const shown = runScontrol(last.job);
    expect(shown).toMatch(/Comment=probe-watch-test/);
    expect(shown).toMatch(/TimeLimit=00:20:00/);

    // The same checkpoints, the same flags, in one process.
    const local = join(root, 'local-watch');
    const once = runProbe(['watch', watched, '--out', local, '--once', '--settle', '0', ...rungs], {}, 600_000);
    expect(once.code, once.stderr).toBe(0);
    const trend = (dir: string) => (JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as { trend: unknown[] }).trend;
    expect(trend(run)).toHaveLength(3);
    expect(trend(run)).toEqual(trend(local));
  }, 900_000);
  it('rides out a controller that is briefly away: sbatch and squeue failing at first are asked again, and the watch ends as usual', () => {
    const root = tempDir();
    const watched = join(root, 'ckpts');
    mkdirSync(watched);
    cpSync(join(LADDER, ORDER[0]!), join(watched, ORDER[0]!), { recursive: true });
    // Shims before the real commands on PATH: each fails its first two calls as a controller that does not answer.
    const shims = join(root, 'shims');
    mkdirSync(shims);
    const shim = (command: string, error: string) => {
      const real = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
      const file = join(shims, command);
      writeFileSync(
        file,
        `#!/bin/sh\nn=$(cat "${file}.calls" 2>/dev/null || echo 0)\necho $((n + 1)) > "${file}.calls"\nif [ "$n" -lt 2 ]; then echo "${command}: error: ${error}" >&2; exit 1; fi\nexec ${real} "$@"\n`,
      );
      chmodSync(file, 0o755);
    };
    shim('sbatch', 'Batch job submission failed: Unable to contact slurm controller (connect failure)');
    shim('squeue', 'slurm_load_jobs error: Socket timed out on send/recv operation');
    const out = join(root, 'run');
    const run = runProbe(
      ['watch', watched, '--once', '--settle', '0', '--poll', '1', '--out', out, '-n', '0', '--asap-runs', '0', '--limit', '2', '--slurm'],
      { PATH: `${shims}:${process.env.PATH}` },
      240_000,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /slurm: sbatch: Batch job submission failed: Unable to contact slurm controller \(connect failure\) — asking again at the next look/,
    );
    expect(run.stderr).toMatch(
      /slurm: squeue: slurm_load_jobs error: Socket timed out on send\/recv operation — asking again at the next look/,
    );
    // Submitted once, when sbatch answered; collected once squeue did.
    expect(lines<JobLine>(join(out, 'slurm.jsonl')).map((j) => [j.event, j.stage, j.outcome])).toEqual([
      ['submitted', 'cheap', undefined],
      ['ended', 'cheap', 'collected'],
    ]);
    expect(lines<{ event: string }>(join(out, 'watch.jsonl')).some((e) => e.event === 'scored')).toBe(true);
  }, 300_000);
});

function runScontrol(job: string): string {
  return spawnSync('scontrol', ['show', 'job', job], { encoding: 'utf8' }).stdout;
}
