/**
 * `probe screen --slurm` on a real one-node Slurm (scripts/start-slurm.sh): each
 * checkpoint's stage of the ladder is a Slurm job that runs probe itself, and the screen
 * decides the next stage from what the jobs wrote. Its results equal a screen in one
 * process; a job cancelled mid-run (scancel) is submitted again; a screen SIGKILLed after
 * submitting is resumed without submitting any job twice for finished work; the
 * shortlist's ASAP episodes run as jobs too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { readStageJobResult, writeStageJobResult } from '../src/pipeline/stage-job.ts';
import { cancelJob, jobStates } from '../src/slurm/jobs.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { runProbe, runProbeKilledAfter } from './helpers/cli.ts';
import { copyCheckpoint, PROBE_BIN, tempDir } from './helpers/paths.ts';
import { skipWithoutSlurm, waitForEnd } from './helpers/slurm.ts';

const CKPTS = ['ngram-prose', 'attn-agent', 'contaminated-agent'].map((n) => join(EMBEDDED_CHECKPOINTS, n));
// Small and fast, yet every stage has work: pass@K for the best candidate and the control beside it, a shortlist of one.
const RUNGS = [
  '--probes',
  join(REPO_ROOT, 'probes', 'demo.jsonl'),
  '--limit',
  '3',
  '-n',
  '2',
  '--passk-max-tokens',
  '64',
  '--shortlist',
  '1',
  '--passk-top',
  '2',
  '--asap-runs',
  '0',
  '--no-cache',
];
const SETTINGS = ['--ckpt', ...CKPTS, ...RUNGS];
const SLURM = ['--slurm', '--sbatch=--comment=probe-screen-test', '--sbatch=--time=10'];

interface JobLine {
  event: 'submitted' | 'ended';
  key: string;
  stage: string;
  checkpoint?: string;
  job: string;
  attempt?: number;
  state?: string;
  outcome?: string;
  dir?: string;
}

const jobLines = (run: string): JobLine[] => {
  const file = join(run, 'slurm.jsonl');
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as JobLine)
    : [];
};

interface Screened {
  results: Array<{
    checkpoint: string;
    bpb: number;
    mcq_acc: number;
    pass_at: Record<string, number> | null;
    shortlisted: boolean;
    asap: { pass_at_1: number } | null;
  }>;
  shortlist: string[];
  errors?: Array<{ file: string | null; field: string | null; message: string }>;
}
const screened = (run: string) => JSON.parse(readFileSync(join(run, 'results.json'), 'utf8')) as Screened;

function startScreen(args: string[]): { child: ChildProcess; log: () => string; ended: Promise<number | null> } {
  const child = spawn(process.execPath, [PROBE_BIN, 'screen', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stderr!.on('data', (d) => (text += d));
  child.stdout!.on('data', (d) => (text += d));
  return { child, log: () => text, ended: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, log: () => string, timeoutMs = 120_000): Promise<void> {
  const started = Date.now();
  while (!(await ok())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("a job's result file", () => {
  it('keeps the numbers JSON cannot hold (an MCQ accuracy over no scoreable item is NaN), so the screen ranks what the job had', () => {
    const dir = tempDir();
    const result = {
      checkpoint: 'c',
      result: { mcq: { acc: Number.NaN, acc_norm: Number.NaN, n: 3 }, bpb: Number.POSITIVE_INFINITY },
      failure: null,
    };
    writeStageJobResult(dir, result);
    expect(readStageJobResult(dir, 'c')).toEqual(result);
    expect(readStageJobResult(tempDir(), 'c')).toBeUndefined();
    // Another checkpoint's result in this job's directory is credited to neither.
    expect(() => readStageJobResult(dir, 'd')).toThrow(
      /result\.json: field "checkpoint": expected "d", the checkpoint this job was given$/,
    );
    writeFileSync(join(dir, 'result.json'), '{"checkpoint": "c", "result": {}, "failure": {"message": 3}}');
    expect(() => readStageJobResult(dir, 'c')).toThrow(/result\.json: field "failure": expected null or/);
  });
});

describe('probe screen --slurm refuses what it cannot do, before any job', () => {
  it('without --out: one line naming --out, exit 2', () => {
    const run = runProbe(['screen', ...SETTINGS, '--slurm']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/^probe: --out: --slurm needs --out DIR/m);
  });

  it('with --asap-env terminal or research: one line naming --asap-env, exit 2', () => {
    const run = runProbe(['screen', ...SETTINGS, '--slurm', '--out', join(tempDir(), 'run'), '--asap-env', 'swe', 'terminal']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/^probe: --asap-env: terminal: not with --slurm/m);
  });
});

describe.skipIf(skipWithoutSlurm || skipWithoutBwrap)('probe screen --slurm on a real Slurm cluster', () => {
  const root = tempDir();
  let local: Screened;
  beforeAll(() => {
    const run = runProbe(['screen', ...SETTINGS, '--out', join(root, 'local')], {}, 300_000);
    expect(run.code, run.stderr).toBe(0);
    local = screened(join(root, 'local'));
    // The settings make every stage count: pass@K tells the control from the candidates.
    expect(local.results.map((r) => r.pass_at !== null)).toEqual([true, true, true]);
    expect(local.shortlist).toHaveLength(1);
  }, 300_000);

  it("runs each checkpoint's stage as a Slurm job with the user's sbatch options; rows and shortlist equal one process's; a job's recorded failure is its checkpoint's; run.json's settings equal too", async () => {
    const out = join(root, 'slurm');
    // A fourth checkpoint whose graph is cut short: it resolves, then fails to load inside its job (bad input, exit 2), as in one process.
    const broken = copyCheckpoint(join(EMBEDDED_CHECKPOINTS, 'ngram-agent'));
    const model = join(broken, 'onnx', 'model.onnx');
    writeFileSync(model, readFileSync(model).subarray(0, 1000));
    const run = runProbe(['screen', '--ckpt', ...CKPTS, broken, ...RUNGS, '--out', out, ...SLURM], {}, 300_000);
    expect(run.code, run.stderr).toBe(2);
    // The failed checkpoint has no row; the others' ranks, pass@K and shortlist are one process's without it.
    expect(screened(out).results).toEqual(local.results);
    expect(screened(out).shortlist).toEqual(local.shortlist);
    expect(screened(out).errors).toEqual([
      { file: model, field: null, message: expect.stringMatching(/^\S+model\.onnx: not a loadable ONNX model/) },
    ]);
    expect(run.stderr).toMatch(/^probe: \S+model\.onnx: not a loadable ONNX model/m);
    // One job per checkpoint for BPB + MCQ, one per checkpoint that got pass@K; each in a run directory of its own.
    const submitted = jobLines(out).filter((j) => j.event === 'submitted');
    expect(submitted.map((j) => j.stage)).toEqual(['cheap', 'cheap', 'cheap', 'cheap', 'passk', 'passk', 'passk']);
    expect(new Set(submitted.map((j) => j.dir)).size).toBe(7);
    for (const j of submitted) expect(j.dir!.startsWith(join(out, 'jobs', j.stage))).toBe(true);
    const ended = new Map(jobLines(out).flatMap((j) => (j.event === 'ended' ? [[j.job, [j.state, j.outcome]]] : [])));
    expect(submitted.map((j) => [j.checkpoint, ...ended.get(j.job)!])).toEqual(
      submitted.map((j) => [j.checkpoint, ...(j.checkpoint === broken ? ['FAILED', 'failed'] : ['COMPLETED', 'collected'])]),
    );
    expect(run.stderr).toMatch(/slurm: bpb \+ mcq: .* in Slurm job \d+/);
    // --slurm and --sbatch decide no number: the settings a resume must match are the local screen's.
    const manifest = (dir: string) =>
      JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { config: unknown; checkpoints: Array<{ name: string }> };
    expect(manifest(out).config).toEqual(manifest(join(root, 'local')).config);
    // How each job served its checkpoint (BOS as resolved, the engine) is in the screen's run.json, as one process records it.
    expect(manifest(out).checkpoints.filter((c) => c.name !== broken)).toEqual(manifest(join(root, 'local')).checkpoints);
  }, 300_000);

  it('submits a job cancelled mid-run again, and the screen completes with the same results', async () => {
    const out = join(root, 'cancelled');
    const screen = startScreen([...SETTINGS, '--out', out, ...SLURM]);
    // The first checkpoint's BPB + MCQ job, cancelled while it runs, before it has written its result.
    await until('the first job submitted', () => jobLines(out).some((j) => j.event === 'submitted'), screen.log);
    const first = jobLines(out).find((j) => j.event === 'submitted')!;
    await until(
      `job ${first.job} running`,
      async () => {
        const state = (await jobStates([first.job])).get(first.job)!;
        return state.known && state.state === 'RUNNING';
      },
      screen.log,
    );
    expect(existsSync(join(first.dir!, 'result.json')), 'the job was to be cancelled before its result').toBe(false);
    await cancelJob(first.job);
    expect(await screen.ended, screen.log()).toBe(0);
    expect(screened(out).results).toEqual(local.results);
    expect(screened(out).shortlist).toEqual(local.shortlist);
    const lines = jobLines(out).filter((j) => j.key === first.key);
    expect(lines.map((j) => [j.event, j.attempt ?? j.state, j.outcome])).toEqual([
      ['submitted', 1, undefined],
      ['ended', 'CANCELLED', 'retried'],
      ['submitted', 2, undefined],
      ['ended', 'COMPLETED', 'collected'],
    ]);
    expect(screen.log()).toMatch(new RegExp(`job ${first.job} ended CANCELLED without its result`));
  }, 300_000);

  it('a screen SIGKILLed after submitting is resumed: its jobs waited for or collected, no job submitted twice for finished work', async () => {
    const out = join(root, 'killed');
    // The 4th line of slurm.jsonl: the three BPB + MCQ jobs submitted, the first of them collected.
    // (Only the screen appends to slurm.jsonl: the jobs, which inherit the variable, write no file of that name.)
    runProbeKilledAfter(['screen', ...SETTINGS, '--out', out, ...SLURM], 'slurm.jsonl:4');
    const before = jobLines(out);
    expect(before.map((j) => [j.event, j.stage])).toEqual([
      ['submitted', 'cheap'],
      ['submitted', 'cheap'],
      ['submitted', 'cheap'],
      ['ended', 'cheap'],
    ]);
    // One of the others finishes while no screen is there to see it; the third may still run.
    const unseen = before.filter((j) => j.event === 'submitted' && !before.some((e) => e.event === 'ended' && e.job === j.job));
    const end = await waitForEnd(unseen[0]!.job, 120_000);
    expect(end.known && end.state).toBe('COMPLETED');

    const rerun = runProbe(['screen', ...SETTINGS, '--out', out, '--resume', ...SLURM], {}, 300_000);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(screened(out).results).toEqual(local.results);
    expect(screened(out).shortlist).toEqual(local.shortlist);
    const after = jobLines(out);
    const submissions = new Map<string, number>();
    for (const j of after.filter((e) => e.event === 'submitted')) submissions.set(j.key, (submissions.get(j.key) ?? 0) + 1);
    // Every checkpoint's stage submitted once: the cheap jobs before the kill, the pass@K jobs after it.
    expect([...submissions.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    expect(after.filter((j) => j.event === 'submitted' && j.stage === 'cheap').map((j) => j.job)).toEqual(
      before.filter((j) => j.event === 'submitted').map((j) => j.job),
    );
    expect(after.filter((j) => j.event === 'ended').map((j) => j.outcome)).toEqual(Array(6).fill('collected'));
  }, 300_000);
  it("runs the shortlist's ASAP episodes as Slurm jobs too, each in its job's directory, with one process's results", () => {
    // One checkpoint, the smallest rungs: the point is the ASAP stage's way through a job.
    const args = ['screen', '--ckpt', CKPTS[1]!, '--probes', join(REPO_ROOT, 'probes', 'demo.jsonl'), '--limit', '2', '-n', '1'];
    args.push('--passk-max-tokens', '32', '--shortlist', '1', '--asap-runs', '1', '--asap-max-steps', '2', '--no-cache');
    const here = runProbe([...args, '--out', join(root, 'asap-local')], {}, 300_000);
    expect(here.code, here.stderr).toBe(0);
    const out = join(root, 'asap-slurm');
    const run = runProbe([...args, '--out', out, ...SLURM], {}, 300_000);
    expect(run.code, run.stderr).toBe(0);
    const [mine, theirs] = [screened(out), screened(join(root, 'asap-local'))];
    expect(mine.results).toEqual(theirs.results);
    expect(mine.results.filter((r) => r.asap !== null)).toHaveLength(1);
    const asapJobs = jobLines(out).filter((j) => j.event === 'submitted' && j.stage === 'asap');
    expect(asapJobs.map((j) => j.checkpoint)).toEqual(mine.shortlist);
    expect(existsSync(join(asapJobs[0]!.dir!, 'asap', 'episodes'))).toBe(true);
    expect(run.stderr).toMatch(/ASAP transcripts of the shortlist: \S+\/jobs\/asap\/\*\/asap\/episodes/);
  }, 300_000);
});
