/** The bubblewrap sandbox: confinement, limits, state. */
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { LocalSandbox } from '../src/sandbox/local.ts';
import { LIMITS } from '../src/sandbox/types.ts';
import { fixtureTask } from './helpers/tasks.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';

/** Loaded once: loading is async; each describe takes its own copy. */
const MISSING_COLON = await fixtureTask('missing-colon');

describe.skipIf(skipWithoutBwrap)('local sandbox (bubblewrap)', () => {
  let sb: LocalSandbox;
  const task = { ...MISSING_COLON };
  beforeAll(async () => {
    sb = await LocalSandbox.create(task);
  });
  afterAll(async () => {
    await sb.close();
  });

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
    // The host's system git config (credential helpers, tokens) is not the jail's.
    expect((await sb.exec('test -e /etc/gitconfig && echo present || echo absent')).output).toBe('absent\n');
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
    await sb.exec(
      "sed -i 's/-> float$/-> float:/' tests/missing_colon.py && echo new > notes.txt && python3 -c 'import tests.missing_colon' && mkdir -p .pytest_cache && touch .pytest_cache/x",
    );
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

describe.skipIf(skipWithoutBwrap)('local sandbox: the jail and its limits', () => {
  const task = { ...MISSING_COLON };
  let sb: LocalSandbox;
  beforeAll(async () => {
    process.env.PROBE_SANDBOX_DISK_MB = '64';
    sb = await LocalSandbox.create(task);
    delete process.env.PROBE_SANDBOX_DISK_MB;
  });
  afterAll(async () => {
    await sb.close();
  });

  it('runs as an unprivileged user with no capability, no shadow file, no nested user namespace, a read-only root', async () => {
    const r = await sb.exec(
      'grep -E "^Cap(Eff|Prm|Bnd)" /proc/self/status; grep NoNewPrivs /proc/self/status; id -u; id -g; test -e /etc/shadow && echo has-shadow; unshare -U true 2>/dev/null && echo nested; touch /etc/x /opt/x 2>/dev/null && echo wrote-root; echo end',
    );
    expect(r.output).toMatch(/^CapPrm:\s+0{16}\nCapEff:\s+0{16}\nCapBnd:\s+0{16}\nNoNewPrivs:\s+1\n1000\n1000\nend\n$/);
  });

  it('cannot mount, make devices or remount the system writable', async () => {
    const r = await sb.exec(
      'mount -t tmpfs none /tmp 2>&1; mknod /tmp/sda b 8 0 2>&1; mount -o remount,bind,rw /usr 2>&1; touch /usr/x 2>&1; echo end',
    );
    expect(r.output).toMatch(/must be superuser|Operation not permitted|Permission denied/);
    expect((await sb.exec('ls /tmp/sda 2>&1')).exitCode).not.toBe(0);
    expect(r.output).toMatch(/touch: cannot touch '\/usr\/x'/);
  });

  it('stops a fork bomb at the process limit; the next command runs', async () => {
    const bomb = await sb.exec(
      `python3 -c '
import os, time

n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
except OSError as e:
    print("stopped after", n, "forks:", e.strerror)
'`,
      { timeoutMs: 30_000 },
    );
    const forks = Number(/stopped after (\d+) forks: Resource temporarily unavailable/.exec(bomb.output)?.[1]);
    expect(forks).toBeGreaterThan(LIMITS.processes / 2);
    expect(forks).toBeLessThan(LIMITS.processes);
    expect((await sb.exec('echo alive')).output).toBe('alive\n');
  });

  it('refuses a file over the size limit and an allocation over the memory limit', async () => {
    const big = await sb.exec('ulimit -f; ulimit -d; python3 -c "bytearray(5 * 2**30)" 2>&1 | tail -1');
    expect(big.output).toBe(`${LIMITS.fileBytes / 1024}\n${LIMITS.memoryBytes / 1024}\nMemoryError\n`);
  });

  it.skipIf(process.getuid?.() !== 0)('stops writing at the disk quota (a tmpfs of its own as root)', async () => {
    const fill = await sb.exec('head -c 200000000 /dev/zero > /tmp/fill; echo "exit $?"; ls -l /tmp/fill | cut -d" " -f5');
    expect(fill.output).toMatch(/No space left on device/);
    expect(Number(fill.output.trim().split('\n').at(-1))).toBeLessThanOrEqual(64 * 2 ** 20);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect((await sb.exec('ls -A /tmp')).output).toBe('');
  });

  it('keeps /dev read-only; /dev/shm is the sandbox’s own, kept between commands and emptied at restore', async () => {
    const r = await sb.exec(
      'touch /dev/planted 2>&1; mkdir /dev/d 2>&1; echo kept > /dev/shm/left; echo x > /dev/null && echo null-writable',
    );
    expect(r.output).toBe(
      "touch: cannot touch '/dev/planted': Read-only file system\nmkdir: cannot create directory ‘/dev/d’: Read-only file system\nnull-writable\n",
    );
    expect((await sb.exec('cat /dev/shm/left')).output).toBe('kept\n');
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect((await sb.exec('ls -A /dev/shm')).output).toBe('');
  });

  it.skipIf(process.getuid?.() !== 0)(
    'stops writing to /dev/shm at the disk quota: no host memory beyond it (bwrap’s /dev was half the RAM)',
    async () => {
      // Host shared memory (tmpfs pages) before and after, read in the same command: the file is still there at the second read.
      const fill = await sb.exec(
        'grep Shmem: /proc/meminfo; head -c 200000000 /dev/zero > /dev/shm/fill; echo "exit $?"; grep Shmem: /proc/meminfo; stat -c %s /dev/shm/fill',
      );
      expect(fill.output).toMatch(/No space left on device\nexit 1\n/);
      const [before, after] = [...fill.output.matchAll(/Shmem:\s+(\d+) kB/g)].map((m) => Number(m[1]) * 1024);
      expect(Number(fill.output.trim().split('\n').at(-1))).toBeLessThanOrEqual(64 * 2 ** 20);
      expect(after! - before!).toBeLessThan(100 * 2 ** 20);
      await sb.restore({ base_commit: task.base_commit, patch: '' });
    },
  );

  it('starts each use clean: /tmp, home, .git and processes do not survive restore', async () => {
    await sb.exec(
      'echo x > /tmp/planted; echo y > ~/.planted; echo "[core]\n\tfsmonitor = evil" >> .git/config; echo "*" >> .git/info/exclude; echo hook > .git/hooks/pre-commit; echo new > untracked.txt',
    );
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    const r = await sb.exec(
      'ls -A /tmp; cat ~/.planted 2>&1; git config core.fsmonitor; grep -c "^\\*$" .git/info/exclude; ls .git/hooks/pre-commit 2>&1; git status --porcelain',
    );
    expect(r.output).not.toMatch(/planted\n|evil|untracked/);
    expect(r.output).toContain('No such file');
  });

  it('reads and writes files through the jail: a planted link cannot reach the host', async () => {
    const host = mkdtempSync(join(tmpdir(), 'probe-host-'));
    await sb.exec(`ln -sf ${host}/written /tmp/link; ln -sf /etc/hostname notes.txt; ln -sf /testbed/inside.txt /tmp/inner`);
    // The host path does not exist in the jail: the write fails there, and nothing appears on the host.
    await expect(sb.writeFile('/tmp/link', 'through a link')).rejects.toThrow(/cannot write \/tmp\/link/);
    expect(existsSync(join(host, 'written'))).toBe(false);
    await sb.writeFile('/tmp/inner', 'followed inside the jail');
    expect((await sb.exec('cat inside.txt')).output).toBe('followed inside the jail');
    // The link resolves inside the jail, where /etc/hostname is absent.
    await expect(sb.readFile('notes.txt')).rejects.toThrow(/cannot read notes.txt/);
    await sb.writeFile('deep/new/dir/file.bin', Buffer.from([0, 1, 2, 255]));
    expect([...(await sb.readFile('deep/new/dir/file.bin'))]).toEqual([0, 1, 2, 255]);
  });

  it('returns patches of any size', async () => {
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    await sb.exec('head -c 3000000 /dev/urandom | base64 > model_file.txt');
    const patch = await sb.diff();
    expect(patch.length).toBeGreaterThan(4_000_000);
    await sb.restore({ base_commit: task.base_commit, patch });
    expect(await sb.diff()).toBe(patch);
  });
});

/** A held-out synthetic task of ../shared: a plain directory (no .git) on a read-only mount, as shared data often is. */
const HELDOUT_TASK = join(import.meta.dirname, '..', '..', 'shared', 'synth', 'heldout-a', 'tasks', 'gym__sessions-1-0', 'task.json');

describe.skipIf(skipWithoutBwrap || !existsSync(HELDOUT_TASK))('local sandbox: a repository from a read-only directory', () => {
  it('is writable inside the jail: sed -i (a temporary file beside the target) edits it', async () => {
    const [task] = await loadTaskFile(HELDOUT_TASK);
    expect(statSync(join(task!.repoDir!, 'gym')).mode & 0o222).toBe(0); // the source really is read-only
    const sb = await LocalSandbox.create(task!);
    try {
      const r = await sb.exec("sed -i '6s#if calories > threshold:#if calories >= threshold:#' gym/sessions.py");
      expect(r.output).toBe('');
      expect(r.exitCode).toBe(0);
      expect(await sb.diff()).toContain('+    if calories >= threshold:');
    } finally {
      await sb.close();
    }
  });
});
