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
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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
    expectOneLineError(bpb(zero), literally(`${zero}: is a character device`));
    // A directory of sets: each *.jsonl in it is read the same way.
    const setDir = join(root, 'sets');
    mkdirSync(setDir);
    cpSync(DEMO_PROBES, join(setDir, 'a.jsonl'));
    mkfifo(join(setDir, 'b.jsonl'));
    expectOneLineError(bpb(setDir), literally(`${join(setDir, 'b.jsonl')}: is a FIFO (named pipe)`));
  });
});
