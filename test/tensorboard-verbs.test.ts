/**
 * `probe bpb|mcq|passk --tensorboard DIR [--step N]`, a trainer's eval hook's way to put a
 * checkpoint's scores beside its loss curve: the real CLI on two checkpoints of the agentic
 * ladder filed as one training run, scored out of order (the later step first) and one of
 * them again, read back through the real TensorBoard's HTTP API — every point at its step,
 * the value the verb's --json printed, none twice — and a point landing before ones a
 * running TensorBoard has read, which a restarted one shows whole. Bad input is one line
 * and exit 2 before any scoring; a TensorBoard write that fails keeps the results.
 */
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import type { BpbResult } from '../src/probes/bpb.ts';
import type { McqResult } from '../src/probes/mcq.ts';
import type { PasskResult } from '../src/probes/passk.ts';
import { type ScoringVerb, stepEventsFile, stepScalars } from '../src/report/step-tensorboard.ts';
import { bwrapUp } from './helpers/bwrap.ts';
import { type CliRun, expectOneLineError, runProbe } from './helpers/cli.ts';
import { tempDir } from './helpers/paths.ts';
import { type ServedTensorboard, serveTensorboard, skipWithoutTensorboard } from './helpers/tensorboard.ts';

const LADDER = join(REPO_ROOT, '..', 'shared', 'agentic-ladder');
const PROBES = join(REPO_ROOT, 'probes', 'demo.jsonl');

type Shown = Record<string, Array<[number, number]>>;

/** The checkpoints a trainer saved: `ckpts/run-7/step-800` (config.json says 800) and `ckpts/run-7/checkpoint-250`. */
function trainingRun(): { root: string; ckpt: (step: number) => string; board: string } {
  const root = tempDir();
  const run = join(root, 'ckpts', 'run-7');
  mkdirSync(run, { recursive: true });
  const names = new Map([
    [800, 'step-800'],
    [250, 'checkpoint-250'],
    [100, 'checkpoint-100'],
  ]);
  for (const [step, name] of names) symlinkSync(join(LADDER, `agentmix-mix25-s${step}`), join(run, name));
  const board = join(root, 'tb');
  mkdirSync(board);
  writeFileSync(join(board, 'notes.txt'), 'not ours'); // nothing else in DIR is touched
  return { root, ckpt: (step) => join(run, names.get(step)!), board };
}

const verbArgs = (verb: ScoringVerb, ckpt: string, board: string, extra: string[] = []) => [
  verb,
  '--ckpt',
  ckpt,
  '--probes',
  PROBES,
  '--limit',
  '6',
  '--no-cache',
  '--tensorboard',
  board,
  '--json',
  ...extra,
];

function scored(run: CliRun): { results: Array<BpbResult | McqResult | PasskResult> } {
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { results: Array<BpbResult | McqResult | PasskResult> };
}

describe.skipIf(skipWithoutTensorboard)('probe bpb and mcq --tensorboard, read through the real TensorBoard', () => {
  let served: ServedTensorboard | undefined;
  afterAll(async () => {
    await served?.stop();
  });

  it('puts each checkpoint’s scores at its step in its training run, the --json values, none twice, in any order', async () => {
    const { ckpt, board } = trainingRun();
    /** What the verbs printed, as TensorBoard keeps it (a 32-bit float): tag → [step, value], the interval from the same code. */
    const want: Shown = {};
    const expect_ = (verb: ScoringVerb, run: CliRun, step: number) => {
      const [result] = scored(run).results;
      const headline =
        verb === 'bpb'
          ? (result as BpbResult).bpb
          : verb === 'mcq'
            ? (result as McqResult).acc_norm!
            : (result as PasskResult).pass_at['1']!;
      const scalars = stepScalars(verb, { checkpoint: result!.checkpoint, [verb]: result }, step);
      // The value is the verb's own headline number (bits per byte, acc_norm), to float32.
      expect(Math.fround(scalars[0]!.value)).toBe(Math.fround(headline));
      expect(scalars.map((s) => s.tag)).toEqual([`probe/${verb}`, `probe/${verb}/low`, `probe/${verb}/high`]);
      for (const s of scalars) {
        const points = (want[s.tag] ??= []).filter(([at]) => at !== step); // a rerun replaces its step's point
        want[s.tag] = [...points, [step, Math.fround(s.value)] as [number, number]].sort((a, b) => a[0] - b[0]);
      }
    };

    // The later step first; its step read from the checkpoint, as the watch reads it (config.json train_steps).
    for (const verb of ['bpb', 'mcq'] as const) {
      const run = runProbe(verbArgs(verb, ckpt(800), board));
      expect_(verb, run, 800);
    }
    // pass@1 where the local jail its samples run in can be made (its own probe set: the shipped sampling one).
    if (bwrapUp) {
      const passk = ['passk', '--ckpt', ckpt(800), '--limit', '2', '-n', '2', '--max-tokens', '32', '--no-cache'];
      expect_('passk', runProbe([...passk, '--tensorboard', board, '--json']), 800);
    }
    // Then the earlier one, --step given; then bpb of it again: its file is replaced, not added to.
    const early = runProbe(verbArgs('bpb', ckpt(250), board, ['--step', '250']));
    expect(early.stderr).toMatch(/step 250 lands before steps already written \(800\)/);
    expect_('bpb', early, 250);
    expect_('mcq', runProbe(verbArgs('mcq', ckpt(250), board)), 250);
    const again = runProbe(verbArgs('bpb', ckpt(250), board, ['--step', '250']));
    expect(again.stderr).toMatch(/replaced the point at step 250/);
    expect_('bpb', again, 250);

    // DIR/<training run>/: `run-7`, the checkpoints' directory, as a watch of it names the run; one file per (step, verb).
    expect(readdirSync(board).sort()).toEqual(['notes.txt', 'run-7']);
    expect(readFileSync(join(board, 'notes.txt'), 'utf8')).toBe('not ours');
    expect(readdirSync(join(board, 'run-7')).sort()).toEqual(
      [
        stepEventsFile(250, 'bpb'),
        stepEventsFile(250, 'mcq'),
        stepEventsFile(800, 'bpb'),
        stepEventsFile(800, 'mcq'),
        ...(bwrapUp ? [stepEventsFile(800, 'passk')] : []),
      ].sort(),
    );

    /** What TensorBoard serves of run-7's tags: tag → [step, value]. */
    const shown = async (tb: ServedTensorboard): Promise<Shown> => {
      const tags = await tb.get<Record<string, Record<string, unknown>>>('data/plugin/scalars/tags');
      expect(Object.keys(tags)).toEqual(['run-7']);
      const out: Shown = {};
      for (const tag of Object.keys(tags['run-7']!).sort()) {
        const points = await tb.get<Array<[number, number, number]>>(
          `data/plugin/scalars/scalars?run=run-7&tag=${encodeURIComponent(tag)}`,
        );
        out[tag] = points.map(([, step, value]) => [step, value]);
      }
      return out;
    };
    const agrees = async (tb: ServedTensorboard, timeoutMs = 60_000) => {
      const wanted = Object.fromEntries(
        Object.keys(want)
          .sort()
          .map((t) => [t, want[t]!]),
      );
      const started = Date.now();
      let got = await shown(tb);
      while (JSON.stringify(got) !== JSON.stringify(wanted) && Date.now() - started < timeoutMs) {
        await new Promise((r) => setTimeout(r, 500));
        got = await shown(tb);
      }
      expect(got).toEqual(wanted);
    };

    served = await serveTensorboard(board);
    await agrees(served);
    for (const tag of Object.keys(want))
      expect(want[tag]!.map(([step]) => step)).toEqual(tag.startsWith('probe/passk') ? [800] : [250, 800]);

    // An eval hook's usual case: a point after those read, picked up by the running TensorBoard (--step overrides the name's 100).
    const next = runProbe(verbArgs('bpb', ckpt(100), board, ['--step', '900']));
    expect(next.stderr).not.toMatch(/lands before|replaced/);
    expect_('bpb', next, 900);
    await agrees(served);

    // The caveat (docs/watch.md): a point landing before steps a running TensorBoard has read is said, and a
    // restarted TensorBoard shows every point in step order.
    const late = runProbe(verbArgs('bpb', ckpt(100), board));
    expect(late.stderr).toMatch(/step 100 lands before steps already written \(250, 800, 900\); a TensorBoard already reading/);
    expect_('bpb', late, 100);
    await served.stop();
    served = await serveTensorboard(board);
    await agrees(served);
    expect((await shown(served))['probe/bpb']!.map(([step]) => step)).toEqual([100, 250, 800, 900]);
  }, 300_000);
});

describe('probe bpb and mcq --tensorboard: bad input and a failed write', () => {
  it('refuses bad --step, --tb-run and --tensorboard in one line, exit 2, before any scoring', () => {
    const { root, ckpt, board } = trainingRun();
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    expectOneLineError(runProbe(verbArgs('bpb', ckpt(800), board, ['--step', '-1'])), /--step.*whole number ≥ 0/);
    expectOneLineError(runProbe(verbArgs('bpb', ckpt(800), board, ['--step', '2.5'])), /--step.*whole number ≥ 0/);
    expectOneLineError(runProbe(verbArgs('mcq', ckpt(800), board, ['--step', '9007199254740993'])), /--step.*whole number ≥ 0/);
    expectOneLineError(runProbe(verbArgs('bpb', ckpt(800), file)), /a-file: cannot create the --tensorboard directory: it is a file/);
    expectOneLineError(
      runProbe(['bpb', '--ckpt', ckpt(800), ckpt(250), '--probes', PROBES, '--tensorboard', board, '--step', '4']),
      /^probe: --step: names the step of one checkpoint, and 2 are scored/,
    );
    expectOneLineError(
      runProbe(['bpb', '--ckpt', ckpt(800), '--probes', PROBES, '--step', '4']),
      /^probe: --step: .*give --tensorboard DIR/,
    );
    expectOneLineError(runProbe(verbArgs('bpb', 'http://127.0.0.1:9/v1', board, ['--step', '4'])), /^probe: --tb-run: http.* is a server/);
    // A checkpoint that says no step, and none given.
    const plain = join(root, 'ckpts', 'final');
    mkdirSync(plain);
    for (const f of readdirSync(join(LADDER, 'agentmix-mix25-s800'))) {
      if (f !== 'config.json') symlinkSync(join(LADDER, 'agentmix-mix25-s800', f), join(plain, f));
    }
    const config = JSON.parse(readFileSync(join(LADDER, 'agentmix-mix25-s800', 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(plain, 'config.json'), JSON.stringify({ ...config, probe_ladder: undefined }));
    expectOneLineError(runProbe(verbArgs('bpb', plain, board)), /^probe: --step: .*final says no training step/);
    // The run's place taken by a file.
    writeFileSync(join(board, 'run-7'), '');
    expectOneLineError(runProbe(verbArgs('bpb', ckpt(800), board)), /run-7: the TensorBoard run run-7 is a file here/);
    expect(readdirSync(board).sort()).toEqual(['notes.txt', 'run-7']); // nothing scored, nothing written
  }, 120_000);

  it('keeps the results when the TensorBoard write fails: --json printed first, then one line naming the file, exit 2', () => {
    const { ckpt, board } = trainingRun();
    // A directory in the point's file's place: the rename fails.
    const taken = join(board, 'run-7', stepEventsFile(800, 'bpb'));
    mkdirSync(taken, { recursive: true });
    const run = runProbe(verbArgs('bpb', ckpt(800), board));
    expect(run.code, run.stderr).toBe(2);
    expect((JSON.parse(run.stdout) as { results: BpbResult[] }).results[0]!.bpb).toBeGreaterThan(0);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^probe: --tensorboard .*cannot write .*step-800's point \(run run-7, step 800\).*the results are complete without it/,
    );
    expect(readdirSync(join(board, 'run-7'))).toEqual([stepEventsFile(800, 'bpb')]); // no temporary file left behind
  }, 120_000);
});
