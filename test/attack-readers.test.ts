/**
 * Issue 36, "readers that bypass util/safe-tree.ts": files probe reads that someone else
 * supplied — a run directory's probe set, a checkpoint directory, a watched training run —
 * were read with a plain `readFileSync` / `openSync` / `statSync` walk, so a FIFO in a
 * file's place blocked the process forever, a link to `/dev/zero` read until memory ran out
 * (16.8 GB in 60 s), and a link loop or a link out of a watched checkpoint was walked. Each
 * is now a one-line InputError naming the file (exit 2), or for `probe watch` and `probe
 * report` that one checkpoint's or one file's failure, with the rest kept.
 *
 * Each case runs the real `probe` bin. Where the code before the fix would block, the run
 * has a time limit and is killed with SIGKILL (a process blocked in `open` on a FIFO runs
 * no signal handler), so the test fails rather than waits.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { type CliRun, expectOneLineError } from './helpers/cli.ts';
import { CKPT, copyCheckpoint, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';

/** The real `probe` bin, killed outright after `timeoutMs` (a FIFO's `open` would also block a SIGTERM handler). */
function probeWithin(args: string[], timeoutMs: number, env: Record<string, string> = {}): CliRun & { killed: boolean } {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    env: { ...process.env, ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr, killed: run.signal === 'SIGKILL' };
}

/** A regex matching `text` literally. */
const literally = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));

const mkfifo = (path: string) => execFileSync('mkfifo', [path]);

describe('probe report: the probe set a run directory names', () => {
  /** A finished `probe bpb` run whose probe set is a copy the test may replace; the run directory and that copy. */
  function bpbRun(): { dir: string; set: string } {
    const root = tempDir();
    const set = join(root, 'set.jsonl');
    cpSync(DEMO_PROBES, set);
    const dir = join(root, 'run');
    const run = probeWithin(['bpb', '--ckpt', CKPT.prose, '--probes', set, '--limit', '2', '--out', dir, '--no-cache'], 120_000);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')).probe_set.source).toBe(set);
    return { dir, set };
  }

  function report(dir: string, timeoutMs = 30_000) {
    const html = join(tempDir(), 'report.html');
    const run = probeWithin(['report', dir, '--html', html], timeoutMs);
    return { ...run, html: run.code === 0 ? readFileSync(html, 'utf8') : '' };
  }

  it('a FIFO in the probe set’s place is not read: the report is written without its items (it blocked forever)', () => {
    const { dir, set } = bpbRun();
    const shown = report(dir);
    expect(shown.code, shown.stderr).toBe(0);
    rmSync(set);
    mkfifo(set);
    const r = report(dir);
    expect(r.killed, 'probe report blocked on the FIFO').toBe(false);
    expect(r.code, r.stderr).toBe(0);
    expect(r.html).toContain('<html');
  });

  it('a link to /dev/zero in its place (or in the run directory, as the copy of the set) is not read (it reached 16.8 GB in 60 s)', () => {
    const { dir, set } = bpbRun();
    rmSync(set);
    symlinkSync('/dev/zero', set);
    // The copy inside the run directory is tried first.
    symlinkSync('/dev/zero', join(dir, 'set.jsonl'));
    const r = report(dir, 10_000);
    expect(r.killed, 'probe report read /dev/zero until killed').toBe(false);
    expect(r.code, r.stderr).toBe(0);
  });

  it('the same set given as --probes is a one-line error naming it (exit 2)', () => {
    const root = tempDir();
    const fifo = join(root, 'set.jsonl');
    mkfifo(fifo);
    const zero = join(root, 'zero.jsonl');
    symlinkSync('/dev/zero', zero);
    const bpb = (probes: string) => probeWithin(['bpb', '--ckpt', CKPT.prose, '--probes', probes, '--limit', '2', '--no-cache'], 20_000);
    expectOneLineError(bpb(fifo), literally(`${fifo}: is a FIFO (named pipe)`));
    expectOneLineError(bpb(zero), literally(`${zero}: is a symbolic link to a character device (/dev/zero)`));
    // A directory of sets: each *.jsonl in it is read the same way.
    const setDir = join(root, 'sets');
    mkdirSync(setDir);
    cpSync(DEMO_PROBES, join(setDir, 'a.jsonl'));
    mkfifo(join(setDir, 'b.jsonl'));
    expectOneLineError(bpb(setDir), literally(`${join(setDir, 'b.jsonl')}: is a FIFO (named pipe)`));
  });
});

describe('a checkpoint directory: every file probe or onnxruntime reads from it', () => {
  const bpb = (ckpt: string, extra: string[] = [], timeoutMs = 30_000) =>
    probeWithin(['bpb', '--ckpt', ckpt, '--probes', DEMO_PROBES, '--limit', '2', '--no-cache', ...extra], timeoutMs);

  it('a FIFO tokenizer_config.json, config.json or tokenizer.json is a one-line error naming it (probe bpb blocked forever)', () => {
    for (const name of ['tokenizer_config.json', 'config.json', 'tokenizer.json']) {
      const ckpt = copyCheckpoint(CKPT.prose);
      rmSync(join(ckpt, name));
      mkfifo(join(ckpt, name));
      const run = bpb(ckpt);
      expect(run.killed, `probe bpb blocked on a FIFO ${name}`).toBe(false);
      expectOneLineError(run, literally(`${join(ckpt, name)}: is a FIFO (named pipe)`));
    }
  });

  it('a link to /dev/zero as the tokenizer, and a FIFO as the graph or beside it in onnx/ (external data onnxruntime opens), are refused', () => {
    const zero = copyCheckpoint(CKPT.prose);
    rmSync(join(zero, 'tokenizer.json'));
    symlinkSync('/dev/zero', join(zero, 'tokenizer.json'));
    const zeroRun = bpb(zero, [], 15_000);
    expect(zeroRun.killed, 'probe bpb read /dev/zero until killed').toBe(false);
    expectOneLineError(zeroRun, literally(`${join(zero, 'tokenizer.json')}: is a symbolic link to a character device (/dev/zero)`));

    const graph = copyCheckpoint(CKPT.prose);
    rmSync(join(graph, 'onnx', 'model.onnx'));
    mkfifo(join(graph, 'onnx', 'model.onnx'));
    expectOneLineError(bpb(graph), literally(`${join(graph, 'onnx', 'model.onnx')}: is a FIFO (named pipe)`));

    const data = copyCheckpoint(CKPT.prose);
    mkfifo(join(data, 'onnx', 'model.onnx_data'));
    expectOneLineError(bpb(data), literally(`${join(data, 'onnx', 'model.onnx_data')}: is a FIFO (named pipe)`));
  });

  it('the content hash of a run directory (--out) refuses a FIFO, a link to /dev/zero and a link loop anywhere in the checkpoint', () => {
    const cases: Array<[string, (ckpt: string) => void, (ckpt: string) => string]> = [
      ['notes.fifo', (c) => mkfifo(join(c, 'notes.fifo')), () => 'is a FIFO (named pipe)'],
      [
        'weights.bin',
        (c) => symlinkSync('/dev/zero', join(c, 'weights.bin')),
        () => 'is a symbolic link to a character device (/dev/zero)',
      ],
      ['loop', (c) => symlinkSync('.', join(c, 'loop')), (c) => `is a symbolic link to ${c}, a directory it is inside of (a loop)`],
    ];
    for (const [name, plant, says] of cases) {
      const ckpt = copyCheckpoint(CKPT.prose);
      plant(ckpt);
      const run = bpb(ckpt, ['--out', join(tempDir(), 'run')], 20_000);
      expect(run.killed, `the content hash blocked on ${name}`).toBe(false);
      expectOneLineError(run, literally(`${join(ckpt, name)}: ${says(ckpt)}`));
    }
  });

  it('a checkpoint laid out as the Hugging Face cache lays out a snapshot (every file a link into blobs/) still scores, with the same content hash', () => {
    const cache = join(tempDir(), 'models--probe--ngram-prose');
    const snapshot = join(cache, 'snapshots', 'abc123');
    mkdirSync(join(snapshot, 'onnx'), { recursive: true });
    mkdirSync(join(cache, 'blobs'));
    for (const name of ['config.json', 'tokenizer.json', 'tokenizer_config.json', join('onnx', 'model.onnx')]) {
      const blob = join(cache, 'blobs', name.replace('/', '-'));
      cpSync(join(CKPT.prose, name), blob);
      symlinkSync(blob, join(snapshot, name));
    }
    const hashes = [CKPT.prose, snapshot].map((ckpt) => {
      const out = join(tempDir(), 'run');
      const run = bpb(ckpt, ['--out', out]);
      expect(run.code, run.stderr).toBe(0);
      return JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')).checkpoints[0].content_hash as string;
    });
    expect(hashes[1]).toBe(hashes[0]);
  });
});

describe('probe watch: what a watched training run holds', () => {
  /** One look at `watched` (`--once`), with the cheap rungs only, as a cron job runs it. */
  const watchOnce = (watched: string, out: string) =>
    probeWithin(
      [
        'watch',
        watched,
        '--out',
        out,
        '--once',
        '--settle',
        '0',
        '--probes',
        DEMO_PROBES,
        '--limit',
        '2',
        '--code',
        join(REPO_ROOT, 'verifiers', 'api__pagination-5'),
        '-n',
        '0',
        '--asap-runs',
        '0',
        '--no-cache',
        '--json',
      ],
      60_000,
    );

  it('a FIFO, a link to /dev/zero, a link loop or a link out of a checkpoint fails that checkpoint, naming the path; the good one is scored and kept', () => {
    const watched = join(tempDir(), 'ckpts');
    mkdirSync(watched);
    const land = (name: string) => {
      const dir = join(watched, name);
      cpSync(CKPT.prose, dir, { recursive: true });
      return dir;
    };
    land('step-100');
    // The watch read config.json for the step before anything else: a FIFO there blocked every look.
    const fifo = land('step-200');
    rmSync(join(fifo, 'config.json'));
    mkfifo(join(fifo, 'config.json'));
    // The content hash read every byte it found: a link to /dev/zero never ended.
    const zero = land('step-300');
    symlinkSync('/dev/zero', join(zero, 'weights.bin'));
    // The content hash followed every link: a loop ended the watch with ELOOP and a stack trace.
    const loop = land('step-400');
    symlinkSync('.', join(loop, 'loop'));
    // A link out of the checkpoint (another model's tokenizer, a host file) was read as the checkpoint's own.
    const outside = join(tempDir(), 'elsewhere.json');
    cpSync(join(CKPT.prose, 'tokenizer.json'), outside);
    const leaky = land('step-500');
    rmSync(join(leaky, 'tokenizer.json'));
    symlinkSync(outside, join(leaky, 'tokenizer.json'));

    const out = join(tempDir(), 'watch');
    const run = watchOnce(watched, out);
    expect(run.killed, `probe watch blocked:\n${run.stderr}`).toBe(false);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    const doc = JSON.parse(run.stdout) as { scored: string[]; failures: Array<{ entry: string; message: string }> };
    expect(doc.scored).toEqual([join(watched, 'step-100')]);
    const failed = Object.fromEntries(doc.failures.map((f) => [f.entry.split('/').at(-1), f.message]));
    expect(failed['step-200']).toMatch(literally(`${join(fifo, 'config.json')}: is a FIFO (named pipe)`));
    expect(failed['step-300']).toMatch(
      literally(`${join(zero, 'weights.bin')}: is a symbolic link to /dev/zero, outside a watched checkpoint`),
    );
    expect(failed['step-400']).toMatch(
      literally(`${join(loop, 'loop')}: is a symbolic link to ${loop}, a directory it is inside of (a loop)`),
    );
    expect(failed['step-500']).toMatch(
      literally(`${join(leaky, 'tokenizer.json')}: is a symbolic link to ${outside}, outside a watched checkpoint`),
    );
    // What was computed is kept: step-100's scores are in results.json for the report.
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as { rungs: { bpb: Array<{ checkpoint: string }> } };
    expect(results.rungs.bpb.map((r) => r.checkpoint)).toEqual([join(watched, 'step-100')]);
  });
});

describe('the audit: every other file someone else supplies', () => {
  const bpbArgs = (ckpts: string[], extra: string[]) => [
    'bpb',
    ...ckpts.flatMap((c) => ['--ckpt', c]),
    '--probes',
    DEMO_PROBES,
    '--limit',
    '2',
    ...extra,
  ];

  /** A finished `probe bpb --out` run directory, to be resumed. */
  function bpbRunDir(): string {
    const dir = join(tempDir(), 'run');
    const run = probeWithin(bpbArgs([CKPT.prose], ['--out', dir, '--no-cache']), 120_000);
    expect(run.code, run.stderr).toBe(0);
    return dir;
  }

  it('a run directory resumed with a FIFO as its sample log fails its checkpoint naming it, and a FIFO as its lock is a one-line error (both blocked forever)', () => {
    const dir = bpbRunDir();
    const log = join(dir, 'bpb', 'samples.jsonl');
    rmSync(log);
    mkfifo(log);
    const resumed = probeWithin(bpbArgs([CKPT.prose], ['--out', dir, '--resume', '--no-cache']), 30_000);
    expect(resumed.killed, 'the resume blocked on the FIFO log').toBe(false);
    // Each checkpoint's scoring fails on it, naming it (the verb's way: the run's other work is kept); exit 2, no stack trace.
    expect(resumed.code, resumed.stderr).toBe(2);
    expect(resumed.stderr).toMatch(literally(`probe: ${log}: is a FIFO (named pipe)`));
    expect(resumed.stderr).not.toMatch(/^\s+at /m);

    const locked = join(tempDir(), 'run');
    mkdirSync(locked);
    mkfifo(join(locked, '.lock'));
    const run = probeWithin(bpbArgs([CKPT.prose], ['--out', locked, '--no-cache']), 30_000);
    expect(run.killed, 'the run blocked on the FIFO lock').toBe(false);
    expectOneLineError(run, literally(`${join(locked, '.lock')}: is a FIFO (named pipe)`));
  });

  it('a sample log that is a link to a file outside the run is neither read nor appended to (the resume wrote into the host file)', () => {
    const dir = bpbRunDir();
    const log = join(dir, 'bpb', 'samples.jsonl');
    const host = join(tempDir(), 'host.jsonl');
    cpSync(log, host);
    const before = readFileSync(host, 'utf8');
    rmSync(log);
    symlinkSync(host, log);
    // A checkpoint added on resume appends its items to the log.
    const resumed = probeWithin(bpbArgs([CKPT.prose, CKPT.code], ['--out', dir, '--resume', '--no-cache']), 120_000);
    expect(readFileSync(host, 'utf8')).toBe(before);
    expect(resumed.code, resumed.stderr).toBe(2);
    expect(resumed.stderr).toMatch(literally(`probe: ${log}: is a symbolic link to ${host}, outside the run directory`));
    expect(resumed.stderr).not.toMatch(/^\s+at /m);
  });

  it('a cache entry replaced by a FIFO is a damaged entry: computed again and replaced (it blocked forever)', () => {
    const cache = join(tempDir(), 'cache');
    const first = probeWithin(bpbArgs([CKPT.prose], ['--cache', cache, '--json']), 120_000);
    expect(first.code, first.stderr).toBe(0);
    const entries = execFileSync('find', [cache, '-type', 'f', '-name', '*.json'], { encoding: 'utf8' }).trim().split('\n');
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) {
      rmSync(entry);
      mkfifo(entry);
    }
    const again = probeWithin(bpbArgs([CKPT.prose], ['--cache', cache, '--json']), 30_000);
    expect(again.killed, 'probe bpb blocked on the FIFO cache entry').toBe(false);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/holds a damaged entry, .*: it cannot be read \(.*is a FIFO/);
    expect(JSON.parse(again.stdout).results[0].bpb).toBe(JSON.parse(first.stdout).results[0].bpb);
  });

  it('a trajectory that is a FIFO is a one-line error naming it (probe replay blocked forever)', () => {
    const fifo = join(tempDir(), 'shop__pricing-1.traj.json');
    mkfifo(fifo);
    const run = probeWithin(['replay', fifo, '--task', join(REPO_ROOT, 'verifiers', 'shop__pricing-1', 'task.json')], 30_000);
    expect(run.killed, 'probe replay blocked on the FIFO').toBe(false);
    expectOneLineError(run, literally(`${fifo}: is a FIFO (named pipe)`));
  });

  it('plain code to score (--code) holding a link loop is a one-line error naming it (the walk ended in ELOOP and a stack trace)', () => {
    const code = join(tempDir(), 'code');
    mkdirSync(code);
    writeFileSync(join(code, 'a.py'), 'print(1)\n');
    symlinkSync('.', join(code, 'loop'));
    const watched = join(tempDir(), 'ckpts');
    mkdirSync(watched);
    const run = probeWithin(['watch', watched, '--out', join(tempDir(), 'watch'), '--once', '--code', code, '--asap-runs', '0'], 30_000);
    expectOneLineError(run, literally(`${join(code, 'loop')}: is a symbolic link to ${code}, a directory it is inside of (a loop)`));
  });
});

describe('safe-tree’s line reader', () => {
  it('reads lines across its chunks (CRLF, no last line end) and refuses a line past its cap, naming file and line', async () => {
    const { readLines } = await import('../src/util/safe-tree.ts');
    const file = join(tempDir(), 'rows.jsonl');
    const long = 'x'.repeat(3 * 1024 * 1024 + 17); // across three 1 MiB chunks
    writeFileSync(file, `a\r\n${long}\n\né\nlast`);
    expect([...readLines(file)].map(({ text, line }) => [line, text.length > 10 ? text.length : text])).toEqual([
      [1, 'a'],
      [2, long.length],
      [3, ''],
      [4, 'é'],
      [5, 'last'],
    ]);
    // A sparse file of 64 MiB with no newline: refused at the cap, never held whole.
    const sparse = join(tempDir(), 'sparse.jsonl');
    writeFileSync(sparse, 'ok\n');
    truncateSync(sparse, 64 * 1024 * 1024);
    const lines = readLines(sparse, { maxLineBytes: 1024 * 1024, what: 'a dataset file' });
    expect(lines.next().value).toEqual({ text: 'ok', line: 1 });
    expect(() => lines.next()).toThrow(literally(`${sparse}:2: line is longer than 1.0 MiB, over the cap on one line of a dataset file`));
  });
});
