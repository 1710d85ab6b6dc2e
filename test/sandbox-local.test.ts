/** The bubblewrap sandbox: confinement, limits, state. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBubblewrap, LocalSandbox } from '../src/sandbox/local.ts';
import { fixtureTask } from './helpers/tasks.ts';

describe.skipIf(!hasBubblewrap())('local sandbox (bubblewrap)', () => {
  let sb: LocalSandbox;
  const task = fixtureTask('missing-colon');
  beforeAll(async () => { sb = await LocalSandbox.create(task); });
  afterAll(async () => { await sb.close(); });

  it('has the repository at /testbed at its base commit, with a clean tree', async () => {
    const r = await sb.exec('pwd && git rev-parse HEAD && git status --porcelain');
    expect(r.output).toBe(`/testbed\n${task.base_commit}\n`);
    expect(await sb.diff()).toBe('');
  });

  it('has no network', async () => {
    const r = await sb.exec(`python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"`);
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/Network is unreachable|OSError/);
    const names = await sb.exec('cat /proc/net/dev | tail -n +3 | cut -d: -f1');
    expect(names.output.trim()).toBe('lo');
  });

  it('keeps the system read-only and the host out of sight', async () => {
    expect((await sb.exec('touch /usr/probe-was-here')).exitCode).not.toBe(0);
    expect((await sb.exec('ls /root /home 2>&1; echo done')).output).not.toMatch(/\.npm|work/);
    expect((await sb.exec('echo hi > /tmp/x && cat /tmp/x')).output).toBe('hi\n');
  });

  it('kills the whole process group on timeout', async () => {
    const r = await sb.exec('sleep 30 & sleep 30; echo never', { timeoutMs: 500 });
    expect(r.timedOut).toBe(true);
    expect(r.exitCode).toBe(124);
    expect(r.durationMs).toBeLessThan(10_000);
    expect((await sb.exec('ps -e -o comm= | grep -c sleep || true')).output.trim()).toBe('0');
  });

  it('caps output and interleaves stderr with stdout', async () => {
    const small = await LocalSandbox.create(task, { outputCap: 1000 });
    const r = await small.exec('head -c 100000 /dev/zero | tr "\\0" a');
    expect(r.output.length).toBe(1000);
    expect(r.truncated).toBe(true);
    const mixed = await small.exec('echo one; echo two >&2; echo three');
    expect(mixed.output).toBe('one\ntwo\nthree\n');
    await small.close();
  });

  it('diffs edits and untracked files, ignoring run artifacts, and restores states', async () => {
    await sb.exec("sed -i 's/-> float$/-> float:/' tests/missing_colon.py && echo new > notes.txt && python3 -c 'import tests.missing_colon' && mkdir -p .pytest_cache && touch .pytest_cache/x");
    const patch = await sb.diff();
    expect(patch).toContain('+def division(a: float, b: float) -> float:');
    expect(patch).toContain('+++ b/notes.txt');
    expect(patch).not.toMatch(/__pycache__|pytest_cache/);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect(await sb.diff()).toBe('');
    await sb.restore({ base_commit: task.base_commit, patch });
    expect(await sb.diff()).toBe(patch);
    expect((await sb.readFile('notes.txt')).toString()).toBe('new\n');
  });
});
