/** The Docker sandbox: the same contract as the local one, and the same T* on real trajectories. */
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_IMAGE, DockerSandbox, sweepLeftovers } from '../src/sandbox/docker.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { fixtureTask } from './helpers/tasks.ts';

describe.skipIf(skipWithoutDocker)('docker sandbox', () => {
  const task = fixtureTask('missing-colon');
  let sb: DockerSandbox;
  beforeAll(async () => { sb = await DockerSandbox.create(task); });
  afterAll(async () => { await sb.close(); });

  it('has the repository at /testbed at its base commit', async () => {
    const r = await sb.exec('pwd && git rev-parse HEAD && git status --porcelain');
    expect(r.output).toBe(`/testbed\n${task.base_commit}\n`);
  });

  it('has no network', async () => {
    const r = await sb.exec(`python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"`);
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/Network is unreachable/);
  });

  it('enforces time limits inside the container', async () => {
    const r = await sb.exec('sleep 30; echo never', { timeoutMs: 1000 });
    expect(r.timedOut).toBe(true);
    expect(r.output).not.toContain('never');
    expect((await sb.exec('echo still usable')).output).toBe('still usable\n');
  });

  it('moves files through put/get archive and diffs and restores states', async () => {
    await sb.writeFile('notes/todo.txt', 'ünïcode ✓\n');
    expect((await sb.readFile('/testbed/notes/todo.txt')).toString()).toBe('ünïcode ✓\n');
    const patch = await sb.diff();
    expect(patch).toContain('+++ b/notes/todo.txt');
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect(await sb.diff()).toBe('');
    await sb.restore({ base_commit: task.base_commit, patch });
    expect(await sb.diff()).toBe(patch);
  });

  it('labels its containers and removes leftovers of a dead run', async () => {
    const docker = new Docker();
    const mine = await docker.listContainers({ filters: { label: ['probe.sandbox'] } });
    expect(mine.some((c) => c.Labels['probe.pid'] === String(process.pid))).toBe(true);
    // A container whose owner process no longer exists, as a run killed with SIGKILL leaves it.
    const orphan = await docker.createContainer({ Image: BASE_IMAGE, Cmd: ['sleep', 'infinity'], Labels: { 'probe.sandbox': '1', 'probe.pid': '999999999' } });
    await sweepLeftovers(true);
    await expect(orphan.inspect()).rejects.toThrow(/no such container/i);
    expect((await sb.exec('echo alive')).output).toBe('alive\n'); // ours is kept
  });
});

describe.skipIf(skipWithoutDocker || !hasRealData)('replay in docker matches the local sandbox', () => {
  const task = fixtureTask('missing-colon');
  const docker = { openSandbox: (t: LoadedTask) => openSandbox('docker', t), sandboxName: 'docker', concurrency: 2 };
  it.each([
    ['mini-swe-agent/github_issue.v1.traj.json', 4],
    ['swe-agent/test-repo-i1.traj', 2],
  ])('%s: T* = step %i', async (file, index) => {
    const r = await replayTrajectory(importTrajectory(real(file)), task, docker);
    expect(r.rejected).toBeNull();
    expect(r.decisiveStep?.index).toBe(index);
  });
});

describe.skipIf(skipWithoutDocker)('docker sandbox cleanup on interrupt', () => {
  it('removes its containers when the process gets SIGINT', async () => {
    const { spawn } = await import('node:child_process');
    const { join } = await import('node:path');
    const { REPO_ROOT } = await import('../src/embedded.ts');
    const script = `
      import { DockerSandbox } from ${JSON.stringify(join(REPO_ROOT, 'src/sandbox/docker.ts'))};
      import { loadTaskFile } from ${JSON.stringify(join(REPO_ROOT, 'src/verify/load-task.ts'))};
      const [task] = loadTaskFile(${JSON.stringify(join(REPO_ROOT, 'test/fixtures/tasks/missing-colon/task.json'))});
      await DockerSandbox.create(task);
      console.log('ready');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => { if (d.toString().includes('ready')) resolve(); }));
    const docker = new Docker();
    const owned = () => docker.listContainers({ all: true, filters: { label: [`probe.pid=${child.pid}`] } });
    expect(await owned()).toHaveLength(1);
    child.kill('SIGINT');
    await new Promise((resolve) => child.on('exit', resolve));
    expect(await owned()).toHaveLength(0);
  });
});
