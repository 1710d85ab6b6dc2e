/**
 * `probe watch` on a training run as a trainer writes it: the agentic ladder's checkpoints
 * copied into a watched directory one by one, in training order. Each is scored exactly
 * once, a SIGKILL mid-checkpoint resumes without rescoring, and the report's trend has one
 * point per checkpoint per probe, as Chromium lays it out.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { decideHeavy } from '../src/watch/plan.ts';
import { stepInName, trainingPosition } from '../src/watch/step.ts';
import { completeness, listEntries } from '../src/watch/discover.ts';
import { announcementOf, readReadyDir } from '../src/watch/ready.ts';
import { chromiumUnavailable, renderedDom } from './helpers/chromium.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { GGUF, LLAMA_SERVER, llamaServerPresent } from './helpers/llama-server.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';

const LADDER = join(REPO_ROOT, '..', 'shared', 'agentic-ladder');
/** Training order: the 25% run's snapshots, then the 0% run's one checkpoint. */
/** The probes, plain code and samples both watches score with: small, the same path through the code. */
const SMALL_RUN = [
  '--probes',
  join(REPO_ROOT, 'probes', 'demo.jsonl'),
  '--limit',
  '3',
  '--code',
  join(REPO_ROOT, 'verifiers', 'api__pagination-5'),
  '-n',
  '2',
];
const ORDER = ['agentmix-mix25-s100', 'agentmix-mix25-s250', 'agentmix-mix25-s500', 'agentmix-mix25-s800', 'agentmix-mix0-s800'];

describe('where a checkpoint sits in training', () => {
  it('reads the step from config.json first, else from the name, and names the training run without it', () => {
    expect(stepInName('agentmix-mix25-s250')).toEqual({ step: 250, rest: 'agentmix-mix25-' });
    expect(stepInName('checkpoint-4000')?.step).toBe(4000);
    expect(stepInName('run7_step_12k')?.step).toBe(12_000);
    expect(stepInName('model.iter0300.gguf')?.step).toBe(300);
    expect(stepInName('final')).toBeUndefined();

    const watched = join(tempDir(), 'run-7');
    mkdirSync(join(watched, 'checkpoint-4000'), { recursive: true });
    expect(trainingPosition(join(watched, 'checkpoint-4000'), watched)).toEqual({ step: 4000, source: 'the name', series: 'run-7' });
    mkdirSync(join(watched, 'latest'));
    writeFileSync(join(watched, 'latest', 'config.json'), JSON.stringify({ global_step: 900 }));
    expect(trainingPosition(join(watched, 'latest'), watched)).toEqual({ step: 900, source: 'config.json global_step', series: 'latest' });
    expect(trainingPosition(join(LADDER, 'agentmix-mix0-s800'), LADDER)).toEqual({
      step: 800,
      source: 'config.json probe_ladder.train_steps',
      series: 'agentmix-mix0',
    });
  });

  it('is complete once its marker exists, or once nothing in it changed for the settle time', () => {
    const watched = join(tempDir(), 'ckpts');
    mkdirSync(join(watched, 'step-1'), { recursive: true });
    mkdirSync(join(watched, '.tmp-step-2'));
    writeFileSync(join(watched, 'step-1', 'config.json'), '{}');
    writeFileSync(join(watched, 'notes.txt'), 'not a checkpoint');
    const [entry, ...rest] = listEntries([watched], undefined);
    expect(rest).toEqual([]); // hidden directories and plain files are not checkpoints
    expect(completeness(entry!, { settleMs: 60_000 }).complete).toBe(false);
    expect(completeness(entry!, { settleMs: 60_000, nowMs: Date.now() + 61_000 }).complete).toBe(true);
    expect(completeness(entry!, { marker: 'COMPLETE', settleMs: 0 })).toEqual({ complete: false, why: 'no COMPLETE yet' });
    writeFileSync(join(watched, 'step-1', 'COMPLETE'), '');
    expect(completeness(entry!, { marker: 'COMPLETE', settleMs: 0 }).complete).toBe(true);
  });

  it("is complete once the trainer announces it: OLMo-core's <run>/step-<n>.ready.json (by path, or by run and step) or <name>.ready", () => {
    const root = tempDir();
    const watched = join(root, 'ckpts');
    const inbox = join(root, 'inbox');
    for (const name of ['run-a-step-100', 'run-a-step-200', 'plain-step-5']) mkdirSync(join(watched, name), { recursive: true });
    mkdirSync(join(root, 'elsewhere', 'step1000'), { recursive: true });
    mkdirSync(join(inbox, 'run-a'), { recursive: true });
    mkdirSync(join(inbox, 'run-b'));
    writeFileSync(join(inbox, 'run-a', 'step-100.ready.json'), '{"step": 100}');
    writeFileSync(
      join(inbox, 'run-b', 'step-1000.ready.json'),
      JSON.stringify({ path: '../../elsewhere/step1000', save_overwrite: false }),
    );
    writeFileSync(join(inbox, 'plain-step-5.ready'), '');
    writeFileSync(join(inbox, 'run-a', '.step-200.ready.json.tmp'), '{"step": 200}'); // before the trainer's rename
    writeFileSync(join(inbox, 'run-a', 'step-300.ready.json'), '{"step": 301}');
    writeFileSync(join(inbox, 'run-b', 'step-400.ready.json'), '{"path": 7}');
    writeFileSync(join(inbox, 'run-b', 'step-100000000000000000.ready.json'), '{}');
    const ready = readReadyDir(inbox);
    expect(ready.problems.map((p) => p.message)).toEqual([
      `${join(inbox, 'run-a', 'step-300.ready.json')}: field "step": says 301, but the file's name says step 300`,
      `${join(inbox, 'run-b', 'step-100000000000000000.ready.json')}: the step in its name is past 2^53, more than a step can be`,
      `${join(inbox, 'run-b', 'step-400.ready.json')}: field "path": expected the checkpoint's path, a non-empty string`,
    ]);
    const of = (path: string, series?: string, step?: number) => announcementOf(ready, { path, series, step })?.file;
    expect(of(join(watched, 'run-a-step-100'), 'run-a', 100)).toBe(join(inbox, 'run-a', 'step-100.ready.json'));
    expect(of(join(watched, 'run-a-step-200'), 'run-a', 200)).toBeUndefined();
    expect(of(join(watched, 'run-a-step-100'), 'run-c', 100)).toBeUndefined(); // another run's step 100
    expect(of(join(root, 'elsewhere', 'step1000'))).toBe(join(inbox, 'run-b', 'step-1000.ready.json'));
    expect(of(join(watched, 'plain-step-5'), 'plain', 5)).toBe(join(inbox, 'plain-step-5.ready'));
    const [entry] = listEntries([watched], undefined);
    expect(completeness(entry!, { settleMs: 60_000, announced: false })).toEqual({ complete: false, why: 'not announced yet' });
    expect(completeness(entry!, { settleMs: 60_000, announced: true }).complete).toBe(true); // the settle time no longer decides
    expect(() => readReadyDir(join(root, 'nope'))).toThrow(/nope: not a directory of ready files/);
  });

  it('--ready-dir: scores what the trainer announced, where it announced it, at the run and step it said; an unreadable ready file is one line and exit 2', () => {
    const root = tempDir();
    const watched = join(root, 'ckpts');
    const inbox = join(root, 'inbox');
    const run = join(root, 'watch');
    mkdirSync(watched);
    for (const name of ORDER.slice(0, 2)) symlinkSync(join(LADDER, name), join(watched, name));
    mkdirSync(join(inbox, 'agentmix-mix25'), { recursive: true });
    mkdirSync(join(inbox, 'mix0-run'));
    writeFileSync(join(inbox, 'agentmix-mix25', 'step-100.ready.json'), '{}'); // s250 is not announced yet
    writeFileSync(join(inbox, 'mix0-run', 'step-800.ready.json'), JSON.stringify({ path: join(LADDER, 'agentmix-mix0-s800') }));
    writeFileSync(join(inbox, 'mix0-run', 'step-900.ready.json'), '{"path": ');
    const args = [
      'watch',
      watched,
      '--ready-dir',
      inbox,
      '--out',
      run,
      '--once',
      ...SMALL_RUN.slice(0, -2),
      '-n',
      '0',
      '--asap-runs',
      '0',
      '--json',
    ];
    const first = runProbe(args);
    expect(first.code, first.stderr).toBe(2);
    expect(first.stderr).toContain(`probe: ${join(inbox, 'mix0-run', 'step-900.ready.json')}: not valid JSON`);
    const doc = JSON.parse(first.stdout) as { trend: Array<{ label: string; series: string; step: number }> };
    expect(doc.trend.map((p) => [p.label, p.series, p.step])).toEqual([
      ['agentmix-mix25-s100', 'agentmix-mix25', 100],
      ['agentmix-mix0-s800', 'mix0-run', 800],
    ]);
    // Announced later: the next look scores it, and nothing twice.
    writeFileSync(join(inbox, 'agentmix-mix25-s250.ready'), '');
    const second = runProbe(args);
    expect((JSON.parse(second.stdout) as { scored: string[] }).scored.map((c) => c.split('/').at(-1))).toEqual(['agentmix-mix25-s250']);
    expectOneLineError(runProbe(['watch', '--out', run, '--once']), /^probe: DIR: name a directory to watch, or --ready-dir$/);
  }, 300_000);

  it('a watched directory that is not one is a one-line error (exit 2), and no run directory is made for it', () => {
    const out = join(tempDir(), 'watch');
    expectOneLineError(runProbe(['watch', join(out, 'nope'), '--out', out, '--once']), /^probe: .*\/nope: not a directory to watch$/);
    expect(existsSync(out)).toBe(false);
    expectOneLineError(runProbe(['watch', REPO_ROOT, '--out', out, '--move', 'far']), /^probe: --move: expected bits per byte > 0, or off/);
  });

  it('gets pass@K and ASAP on the first of a run, every k-th, and where BPB moved past the threshold', () => {
    const rule = { every: 4, move: 0.25 };
    expect(decideHeavy([], { bpb: 2.7 }, rule)).toMatchObject({ heavy: true, reason: 'the first of its training run' });
    const one = [{ checkpoint: 's100', bpb: 2.7, heavy: true }];
    expect(decideHeavy(one, { bpb: 2.6 }, rule)).toEqual({
      heavy: false,
      reason: 'next: the 5th checkpoint, or a bpb 0.25 away from 2.700',
    });
    expect(decideHeavy(one, { bpb: 0.8 }, rule)).toMatchObject({ heavy: true, reason: 'bpb moved 1.900 since s100 (≥ 0.25)' });
    const four = [...one, ...[2.6, 2.55, 2.5].map((bpb, i) => ({ checkpoint: `s${i}`, bpb, heavy: false }))];
    expect(decideHeavy(four, { bpb: 2.52 }, rule)).toMatchObject({ heavy: true, reason: 'every 4th checkpoint (this is the 5th)' });
    expect(decideHeavy(one, { bpb: null }, rule).heavy).toBe(true); // no cheap score (an engine without prompt log-probs)
  });
});

interface Event {
  event: 'cheap' | 'scored' | 'failed';
  entry: string;
  checkpoint: string;
  heavy?: { heavy: boolean; reason: string };
}

const events = (run: string): Event[] =>
  existsSync(join(run, 'watch.jsonl'))
    ? readFileSync(join(run, 'watch.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Event)
    : [];

async function until(what: string, ok: () => boolean, child: ChildProcess, log: () => string, timeoutMs = 240_000): Promise<void> {
  const started = Date.now();
  while (!ok()) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`watch ended before ${what}:\n${log()}`);
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function startWatch(args: string[], env: Record<string, string> = {}): { child: ChildProcess; log: () => string; ended: Promise<void> } {
  const child = spawn(process.execPath, [PROBE_BIN, 'watch', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stderr!.on('data', (d) => (text += d));
  child.stdout!.on('data', (d) => (text += d));
  const ended = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return { child, log: () => text, ended };
}

/** Lines per (checkpoint, item) of a rung's log: exactly one each when nothing was scored twice. */
function linesPerItem(run: string, rung: string): number[] {
  const file = join(run, rung, 'samples.jsonl');
  const counts = new Map<string, number>();
  for (const line of readFileSync(file, 'utf8').trim().split('\n')) {
    const { checkpoint, item } = JSON.parse(line) as { checkpoint: string; item: string };
    counts.set(`${checkpoint}\0${item}`, (counts.get(`${checkpoint}\0${item}`) ?? 0) + 1);
  }
  return [...counts.values()];
}

describe.skipIf(skipWithoutBwrap)('probe watch on the agentic ladder, written one checkpoint at a time', () => {
  it('scores each checkpoint once as it lands, resumes after SIGKILL without rescoring, and the report draws the trend', async () => {
    const root = tempDir();
    const watched = join(root, 'ckpts');
    const run = join(root, 'watch');
    mkdirSync(watched);
    const args = [
      watched,
      '--out',
      run,
      '--settle',
      '1',
      '--poll',
      '0.3',
      ...SMALL_RUN,
      '--passk-max-tokens',
      '64',
      '--asap-runs',
      '1',
      '--asap-instances',
      '1',
      '--asap-max-steps',
      '2',
      '--asap-max-tokens',
      '64',
      '--every',
      '2',
      '--move',
      'off',
      '--no-cache',
    ];
    const land = (name: string) => cpSync(join(LADDER, name), join(watched, name), { recursive: true });
    const scored = (name: string) => events(run).some((e) => e.event === 'scored' && e.entry.endsWith(`/${name}`));

    // Two events (cheap, scored) for each of the first two, then the third's cheap one: the
    // watch SIGKILLs itself right after that fifth line (src/store/jsonl-log.ts).
    const first = startWatch(args, { PROBE_TEST_KILL_AFTER_APPENDS: 'watch.jsonl:5' });
    for (const name of ORDER.slice(0, 2)) {
      land(name);
      await until(`${name} scored`, () => scored(name), first.child, first.log);
    }
    // The third gets pass@K and ASAP (every 2nd): killed once its cheap rungs are recorded, before the rest.
    land(ORDER[2]!);
    await first.ended;
    expect(first.child.signalCode, first.log()).toBe('SIGKILL');
    expect(events(run).map((e) => [e.event, e.entry.split('/').at(-1)])).toEqual([
      ['cheap', ORDER[0]],
      ['scored', ORDER[0]],
      ['cheap', ORDER[1]],
      ['scored', ORDER[1]],
      ['cheap', ORDER[2]],
    ]);

    const second = startWatch(args);
    await until(`${ORDER[2]} scored after the restart`, () => scored(ORDER[2]!), second.child, second.log);
    for (const name of ORDER.slice(3)) {
      land(name);
      await until(`${name} scored`, () => scored(name), second.child, second.log);
    }
    second.child.kill('SIGTERM');
    await second.ended;
    // The restart never opened what was scored before it.
    expect(second.log()).toMatch(/Resuming the watch .* \(2 checkpoints scored before, 1 part-way\)/);
    expect(second.log()).not.toMatch(/watch: agentmix-mix25-s(100|250)\b/);

    // Once more, as a cron job would: nothing new, nothing rescored.
    const once = spawnSync(process.execPath, [PROBE_BIN, 'watch', ...args, '--once', '--json'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(once.status, once.stderr).toBe(0);
    expect((JSON.parse(once.stdout) as { scored: string[] }).scored).toEqual([]);

    const all = events(run);
    const of = (kind: Event['event']) => all.filter((e) => e.event === kind).map((e) => e.entry.split('/').at(-1));
    expect(of('cheap')).toEqual(ORDER);
    expect(of('scored')).toEqual(ORDER);
    expect(of('failed')).toEqual([]);
    expect(all.filter((e) => e.event === 'cheap').map((e) => e.heavy!.heavy)).toEqual([true, false, true, false, true]);
    for (const rung of ['code-bpb', 'bpb', 'mcq', 'passk']) for (const n of linesPerItem(run, rung)) expect(n, rung).toBe(1);
    const manifest = JSON.parse(readFileSync(join(run, 'run.json'), 'utf8')) as { checkpoints: Array<{ name: string }> };
    expect(manifest.checkpoints.map((c) => c.name.split('/').at(-1))).toEqual(ORDER);

    // The watch's numbers are the verbs' numbers: the checkpoint killed mid-way, scored again by probe bpb.
    const doc = JSON.parse(readFileSync(join(run, 'results.json'), 'utf8')) as {
      trend: Array<{ label: string; series: string; step: number; values: Record<string, { value: number }> }>;
    };
    const bpb = spawnSync(
      process.execPath,
      [
        PROBE_BIN,
        'bpb',
        '--ckpt',
        join(watched, ORDER[2]!),
        '--probes',
        join(REPO_ROOT, 'probes', 'demo.jsonl'),
        '--limit',
        '3',
        '--no-cache',
        '--json',
      ],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 },
    );
    expect(bpb.status, bpb.stderr).toBe(0);
    const point = doc.trend.find((p) => p.label === ORDER[2])!;
    expect(point.values.bpb!.value).toBeCloseTo((JSON.parse(bpb.stdout) as { results: Array<{ bpb: number }> }).results[0]!.bpb, 12);
    expect(doc.trend.map((p) => [p.series, p.step])).toEqual([
      ['agentmix-mix0', 800],
      ['agentmix-mix25', 100],
      ['agentmix-mix25', 250],
      ['agentmix-mix25', 500],
      ['agentmix-mix25', 800],
    ]);
    expect(existsSync(join(run, 'trend.svg'))).toBe(true);

    const html = join(root, 'report.html');
    const report = spawnSync(process.execPath, [PROBE_BIN, 'report', run, '--html', html], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(report.status, report.stderr).toBe(0);
    if (chromiumUnavailable()) return;
    // Laid out by Chromium: every point of each probe's panel is drawn inside that panel's frame.
    const measured = join(root, 'measured.html');
    writeFileSync(
      measured,
      readFileSync(html, 'utf8').replace(
        '</body>',
        `<script>
          const out = {};
          for (const panel of document.querySelectorAll('#trend g[data-panel]')) {
            const frame = panel.querySelector('rect').getBoundingClientRect();
            const inside = (c) => { const b = c.getBoundingClientRect(); const x = b.x + b.width / 2, y = b.y + b.height / 2;
              return b.width > 0 && x >= frame.left && x <= frame.right && y >= frame.top && y <= frame.bottom; };
            const points = [...panel.querySelectorAll('circle[data-point]')];
            out[panel.dataset.panel] = { points: points.length, inside: points.filter(inside).length,
              checkpoints: [...new Set(points.map((c) => c.dataset.checkpoint))].length };
          }
          const pre = document.createElement('pre'); pre.id = 'layout'; pre.textContent = JSON.stringify(out); document.body.append(pre);
        </script></body>`,
      ),
    );
    const layout = JSON.parse(/<pre id="layout">([^<]*)<\/pre>/.exec(renderedDom(measured))![1]!) as Record<
      string,
      { points: number; inside: number; checkpoints: number }
    >;
    // Cheap rungs on all five, pass@K and ASAP on the three the watch chose.
    expect(layout).toEqual({
      code_bpb: { points: 5, inside: 5, checkpoints: 5 },
      bpb: { points: 5, inside: 5, checkpoints: 5 },
      mcq: { points: 5, inside: 5, checkpoints: 5 },
      passk: { points: 3, inside: 3, checkpoints: 3 },
      asap: { points: 3, inside: 3, checkpoints: 3 },
      asap_valid_calls: { points: 3, inside: 3, checkpoints: 3 },
    });
  }, 900_000);
});

describe.skipIf(skipWithoutBwrap)('probe watch on every kind of checkpoint --ckpt takes', () => {
  it('a server named by a .url file, a directory, a GGUF served by llama-server; a broken one is reported and the others scored', async () => {
    const root = tempDir();
    const watched = join(root, 'ckpts');
    const run = join(root, 'watch');
    mkdirSync(watched);
    const served = join(LADDER, 'agentmix-mix25-s250');
    const server = spawn(process.execPath, [PROBE_BIN, 'serve', '--ckpt', served, '--port', '0'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      let said = '';
      server.stderr!.on('data', (d) => (said += String(d)));
      while (!/at (http:\/\/\S+)/.test(said)) {
        if (server.exitCode !== null) throw new Error(`probe serve exited: ${said}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      writeFileSync(join(watched, 'step-100.url'), `${/at (http:\/\/\S+)/.exec(said)![1]!}\n`);
      symlinkSync(served, join(watched, 'local-step-100')); // the same checkpoint, in process
      mkdirSync(join(watched, 'broken-step-200'));
      writeFileSync(join(watched, 'broken-step-200', 'config.json'), '{"model_type": "llama"');
      if (llamaServerPresent) symlinkSync(GGUF.s1500, join(watched, 'llama-step-300.gguf'));
      const watch = spawnSync(
        process.execPath,
        [
          PROBE_BIN,
          'watch',
          watched,
          '--out',
          run,
          '--once',
          '--settle',
          '0',
          ...SMALL_RUN,
          '--passk-max-tokens',
          '32',
          '--asap-runs',
          '0',
          '--no-cache',
          '--json',
        ],
        { cwd: REPO_ROOT, encoding: 'utf8', timeout: 600_000, env: { ...process.env, PROBE_LLAMA_SERVER: LLAMA_SERVER } },
      );
      // The broken checkpoint is bad input (exit 2), named in one line; the others are scored all the same.
      expect(watch.status, watch.stderr).toBe(2);
      expect(watch.stderr).toMatch(/^probe: .*broken-step-200.*config\.json/m);
      const doc = JSON.parse(watch.stdout) as {
        trend: Array<{ label: string; series: string; step: number; values: Record<string, { value: number }> }>;
        failures: Array<{ entry: string; stage: string }>;
      };
      expect(doc.failures.map((f) => [f.entry.split('/').at(-1), f.stage])).toEqual([['broken-step-200', 'open']]);
      const point = (label: string) => doc.trend.find((p) => p.label === label)!;
      expect(doc.trend.map((p) => p.label).sort()).toEqual([
        ...(llamaServerPresent ? ['llama-step-300.gguf'] : []),
        'local-step-100',
        'step-100.url',
      ]);
      // Over HTTP and in process, the same numbers (the HTTP parity the project holds to: 1e-4 nats per item).
      for (const probe of ['code_bpb', 'bpb'])
        expect(Math.abs(point('step-100.url').values[probe]!.value - point('local-step-100').values[probe]!.value), probe).toBeLessThan(
          1e-4,
        );
      expect(point('step-100.url').series).toBe('ckpts'); // a name that is only a step: the run is the watched directory
      if (llamaServerPresent) {
        // llama.cpp returns no prompt log-probs: no cheap rungs, so pass@K decides, and it ran.
        const gguf = point('llama-step-300.gguf');
        expect(Object.keys(gguf.values)).toEqual(['passk']);
        expect(gguf.step).toBe(300);
      }
    } finally {
      server.kill('SIGINT');
      await once(server, 'exit');
    }
  }, 900_000);
});
