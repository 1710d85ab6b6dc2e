/**
 * Issue 26, class 12: `probe demo`'s apt-get failed at once when another process held
 * apt's lock, as unattended upgrades do on a fresh machine. The setup's apt call waits for
 * the lock now, saying who holds it. A real process holds the real lock (an fcntl lock, as
 * apt takes it) while the setup's own apt call runs an install of a package already there
 * (nothing new is installed). Root only: apt's locks are root's.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aptGet } from '../src/setup/requirements.ts';

const canRunApt = process.getuid?.() === 0 && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
const hasPython = spawnSync('python3', ['--version'], { stdio: 'ignore' }).status === 0;

/** A python3 process holding `lock` for `seconds`, resolved once it holds it. */
async function holdLock(lock: string, seconds: number): Promise<ChildProcess> {
  const holder = spawn('python3', [
    '-c',
    `import fcntl, sys, time\nf = open(${JSON.stringify(lock)}, 'w')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(${seconds})`,
  ]);
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.once('data', () => resolve());
    holder.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before holding ${lock}`)));
  });
  return holder;
}

// Already installed wherever the sandbox runs: the install changes nothing.
const HARMLESS_INSTALL = ['install', '-y', '-qq', '--no-install-recommends', 'git'];

describe.skipIf(!canRunApt || !hasPython)('class 12: setup waits for the apt lock another process holds', () => {
  it.each(['/var/lib/dpkg/lock-frontend', '/var/lib/apt/lists/lock'])(
    '%s held for 3 s: a plain apt-get fails at once, the setup call says it waits and then succeeds',
    async (lock) => {
      const holder = await holdLock(lock, 3);
      try {
        // What setup ran before: apt-get without waiting (install takes the dpkg lock, update the lists lock; either stops at the lock).
        const plain = spawnSync('apt-get', lock.includes('dpkg') ? HARMLESS_INSTALL : ['update', '-qq'], {
          encoding: 'utf8',
          env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
        });
        expect(plain.status).toBe(100);
        expect(plain.stderr).toContain(`Could not get lock ${lock}. It is held by process ${holder.pid} (python3)`);
        const lines: string[] = [];
        const started = Date.now();
        const run = aptGet(HARMLESS_INSTALL, { log: (line) => lines.push(line), waitS: 60 });
        expect(run.status).toBe(0);
        expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
        expect(lines).toEqual([
          `probe: waiting for apt's lock: ${lock} is held by process ${holder.pid} (python3) (another apt-get, or unattended upgrades); up to 60 s\n`,
        ]);
      } finally {
        holder.kill();
      }
    },
    120_000,
  );

  it('with no lock held it says nothing and runs at once', () => {
    const lines: string[] = [];
    expect(aptGet(HARMLESS_INSTALL, { log: (line) => lines.push(line) }).status).toBe(0);
    expect(lines).toEqual([]);
  }, 120_000);
});
