/**
 * The leftover sweep keeps a live run's containers even when this process may not signal
 * that run's owner. Tests run as root, and root is never refused by kill(pid, 0); so the
 * sweep runs in a child stripped of CAP_KILL against an owner that runs as another uid,
 * which is the refusal (EPERM) a sweep meets when the owner of the run is another user.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { BASE_IMAGE, LABEL, sweepLeftovers } from '../src/sandbox/docker.ts';
import { skipWithoutDocker } from './helpers/docker.ts';

const NOBODY = 65534;
/** `setpriv` arguments that take CAP_KILL away from what it runs (and from all it runs after). */
const WITHOUT_CAP_KILL = ['--bounding-set=-kill', '--inh-caps=-kill', '--'];

/** What kill(pid, 0) says to a process without CAP_KILL: 'EPERM', 'ESRCH', 'ok', or why it could not be asked. */
function signalWithoutCapKill(pid: number): string {
  const ask = `try { process.kill(${pid}, 0); console.log('ok') } catch (e) { console.log(e.code) }`;
  const r = spawnSync('setpriv', [...WITHOUT_CAP_KILL, process.execPath, '-e', ask], { encoding: 'utf8' });
  return r.error ? r.error.message : r.stdout.trim() || r.stderr.trim();
}

/** A process that lives until killed, running as nobody (only root can start one). */
function nobodysProcess(): ChildProcess | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return spawn('sleep', ['600'], { uid: NOBODY, gid: NOBODY, stdio: 'ignore' });
}

/** Whether this machine can make the refusal at all (root with setpriv and the right to drop a capability). */
const canBeRefused = (() => {
  const owner = nobodysProcess();
  if (!owner?.pid) return false;
  try {
    return signalWithoutCapKill(owner.pid) === 'EPERM';
  } finally {
    owner.kill('SIGKILL');
  }
})();

describe.skipIf(skipWithoutDocker || !canBeRefused)('leftover sweep by a process refused the signal', () => {
  it('keeps the containers of an owner it may not signal, and removes them once the owner is gone', async () => {
    const docker = new Docker();
    const owner = nobodysProcess() as ChildProcess;
    const ownerGone = new Promise((resolve) => owner.once('exit', resolve));
    const container = await docker.createContainer({
      Image: BASE_IMAGE,
      Cmd: ['sleep', 'infinity'],
      Labels: { [LABEL]: '1', 'probe.pid': String(owner.pid) },
    });
    try {
      expect(signalWithoutCapKill(owner.pid as number)).toBe('EPERM');
      const sweep = `
        import { sweepLeftovers } from ${JSON.stringify(join(REPO_ROOT, 'src/sandbox/docker.ts'))};
        await sweepLeftovers(true);
      `;
      const r = spawnSync('setpriv', [...WITHOUT_CAP_KILL, process.execPath, '--import', 'tsx', '--input-type=module', '-e', sweep], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect((await container.inspect()).Config.Labels['probe.pid']).toBe(String(owner.pid));

      owner.kill('SIGKILL');
      await ownerGone;
      await sweepLeftovers(true);
      await expect(container.inspect()).rejects.toThrow(/no such container/i);
    } finally {
      owner.kill('SIGKILL');
      await container.remove({ force: true }).catch(() => {});
    }
  }, 90_000);
});
