/** The Docker sandbox: the same contract as the local one, the same jail, and the same T* on real trajectories. */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_IMAGE, DockerSandbox, PRISTINE_ROOT, sweepLeftovers } from '../src/sandbox/docker.ts';
import { layoutImage } from '../src/sandbox/layout-image.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { buildRepoImage, skipWithoutDocker } from './helpers/docker.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { fixtureTask } from './helpers/tasks.ts';

/** Loaded once: loading is async; each describe takes its own copy. */
const MISSING_COLON = await fixtureTask('missing-colon');

/** A host file's digest (null when this process cannot read it): the tests check the host is untouched. */
function hostDigest(path: string): string | null {
  try {
    return createHash('sha256').update(readFileSync(path)).digest('hex');
  } catch {
    return null;
  }
}

describe.skipIf(skipWithoutDocker)('docker sandbox', () => {
  const task = { ...MISSING_COLON };
  let sb: DockerSandbox;
  beforeAll(async () => {
    sb = await DockerSandbox.create(task);
  });
  afterAll(async () => {
    await sb.close();
  });

  it('has the repository at /testbed at its base commit, owned by the sandbox user', async () => {
    const r = await sb.exec('pwd && git rev-parse HEAD && git status --porcelain && stat -c %U:%G . .git/config');
    expect(r.output).toBe(`/testbed\n${task.base_commit}\nsandbox:sandbox\nsandbox:sandbox\n`);
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

  it('runs commands as an unprivileged uid of its own with no capabilities', async () => {
    const r = await sb.exec(
      'id -un; id -u; echo "$HOME"; grep -E "^Cap(Eff|Prm|Bnd)" /proc/self/status; grep NoNewPrivs /proc/self/status',
    );
    const [name, uid, ...rest] = r.output.split('\n');
    expect(name).toBe('sandbox');
    // A uid no account uses, one per container: RLIMIT_NPROC counts a uid across containers.
    expect(Number(uid)).toBeGreaterThanOrEqual(200_000);
    expect(rest.join('\n')).toBe('/tmp\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n');
  });

  it('cannot mount, make device nodes, or write the system, the pristine tree or shared scratch places', async () => {
    for (const command of [
      'mount -t tmpfs none /mnt',
      'mknod /tmp/null c 1 3',
      'touch /usr/x',
      'echo x >> /etc/passwd',
      'touch /opt/probe-pristine/testbed/x',
      'echo x >> /opt/probe-pristine/testbed/.git/config',
      'touch /var/tmp/x',
    ]) {
      const r = await sb.exec(command);
      expect(r.exitCode, command).not.toBe(0);
    }
    expect((await sb.exec('ls /usr/x /var/tmp/x /opt/probe-pristine/testbed/x 2>/dev/null | wc -l')).output).toBe('0\n');
  });

  it('moves files through the jail and diffs and restores states', async () => {
    await sb.writeFile('notes/todo.txt', 'ünïcode ✓\n');
    expect((await sb.readFile('/testbed/notes/todo.txt')).toString()).toBe('ünïcode ✓\n');
    const patch = await sb.diff();
    expect(patch).toContain('+++ b/notes/todo.txt');
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect(await sb.diff()).toBe('');
    await sb.restore({ base_commit: task.base_commit, patch });
    expect(await sb.diff()).toBe(patch);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
  });

  it('keeps stdout and stderr interleaved and caps output per call', async () => {
    expect((await sb.exec('echo out; echo err >&2; echo out2')).output).toBe('out\nerr\nout2\n');
    const capped = await sb.exec('head -c 100000 /dev/zero | tr "\\0" a', { outputCap: 1000 });
    expect(capped.output).toHaveLength(1000);
    expect(capped.truncated).toBe(true);
    expect((await sb.exec('cat', { stdin: 'from stdin\n' })).output).toBe('from stdin\n');
  });

  it('leaves nothing a command wrote or started alive after restore', async () => {
    const plant = await sb.exec(
      [
        'mkdir -p "$HOME/.local/lib/python3.11/site-packages" && echo "raise SystemExit(0)" > "$HOME/.local/lib/python3.11/site-packages/usercustomize.py"',
        'echo planted > /tmp/planted',
        'git config core.hooksPath /tmp/hooks && git config alias.st "!touch /tmp/pwned"',
        'printf "#!/bin/sh\\ntouch /tmp/pwned\\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit',
        'echo "*.py" >> .git/info/exclude',
        'echo untracked > untracked.txt && mkdir -p locked/deep && touch locked/deep/f && chmod 000 locked/deep locked',
        'ls /dev/shm >/dev/null && echo shm > /dev/shm/planted',
      ].join(' && '),
    );
    expect(plant.exitCode, plant.output).toBe(0);
    // A background job dies with its command already: the exec returns at once, not after 1000 s.
    const background = await sb.exec('nohup sleep 1000 >/dev/null 2>&1 & echo started');
    expect(background.output).toBe('started\n');
    expect(background.durationMs).toBeLessThan(10_000);

    await sb.restore({ base_commit: task.base_commit, patch: '' });
    const after = await sb.exec(
      [
        'ls -A /tmp; ls -A /dev/shm',
        'git config --get core.hooksPath; git config --get alias.st',
        'ls .git/hooks | grep -v "\\.sample$"',
        'grep -c "^\\*\\.py$" .git/info/exclude',
        'ls untracked.txt locked 2>/dev/null',
        'ps -u sandbox -o comm= | grep -v -x -e bash -e timeout -e ps -e grep',
        'git status --porcelain',
        'cmp .git/config /opt/probe-pristine/testbed/.git/config && echo same-config',
      ].join('; '),
    );
    expect(after.output).toBe('0\nsame-config\n');
    expect(await sb.diff()).toBe('');
  });

  it('reads and writes through links the sandbox planted inside the jail only, never on the host', async () => {
    const host = { passwd: hostDigest('/etc/passwd'), shadow: hostDigest('/etc/shadow') };
    const containerPasswd = (await sb.exec('cat /etc/passwd')).output;
    await sb.exec('ln -s /etc/passwd notes.txt && ln -sf /etc/shadow /tmp/x && ln -sf /usr/local/bin/evil /tmp/.probe-state.patch');
    // Reads resolve inside the container, with the sandbox user's rights.
    expect((await sb.readFile('notes.txt')).toString()).toBe(containerPasswd);
    await expect(sb.readFile('/tmp/x')).rejects.toThrow(/cannot read \/tmp\/x in the docker sandbox/);
    // Writes too: the container's own system files are not the user's to write.
    await expect(sb.writeFile('notes.txt', 'pwned\n')).rejects.toThrow(/cannot write notes.txt/);
    await expect(sb.writeFile('/tmp/x', 'pwned\n')).rejects.toThrow(/cannot write \/tmp\/x/);
    await expect(sb.writeFile('/tmp/.probe-state.patch', 'pwned\n')).rejects.toThrow(/cannot write/);
    expect((await sb.exec('cat /etc/passwd')).output).toBe(containerPasswd);
    expect((await sb.exec('ls /usr/local/bin/evil')).exitCode).not.toBe(0);
    expect({ passwd: hostDigest('/etc/passwd'), shadow: hostDigest('/etc/shadow') }).toEqual(host);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
  });

  it('moves large files and patches of any size', async () => {
    const big = randomBytes(5 * 2 ** 20);
    await sb.writeFile('big.bin', big);
    expect((await sb.readFile('big.bin')).equals(big)).toBe(true);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    await sb.exec('head -c 3145728 /dev/urandom > data.bin');
    const digest = (await sb.exec('sha256sum data.bin')).output;
    const patch = await sb.diff();
    expect(patch.length).toBeGreaterThan(3 * 2 ** 20);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect((await sb.exec('ls data.bin')).exitCode).not.toBe(0);
    await sb.restore({ base_commit: task.base_commit, patch });
    expect((await sb.exec('sha256sum data.bin')).output).toBe(digest);
    await sb.restore({ base_commit: task.base_commit, patch: '' });
  });

  it('holds its process and file-size limits', async () => {
    const bomb = await sb.exec(':(){ :|:& };:; sleep 10', { timeoutMs: 3000 });
    expect(bomb.timedOut).toBe(true);
    const later = await sb.exec('echo alive; ps -u sandbox -o comm= | wc -l');
    expect(later.output).toMatch(/^alive\n\d+\n$/);
    expect(Number(later.output.split('\n')[1])).toBeLessThan(10);
    const huge = await sb.exec('head -c 2G /dev/zero > huge; echo "exit $?"; stat -c %s huge; rm -f huge');
    expect(huge.output).toContain('File size limit exceeded');
    expect(huge.output).toContain('exit 153');
    expect(huge.output).toMatch(/\n1073741824\n$/);
  });

  it("fills no more than its disk cap, all of it tmpfs: nothing on the host's disk, and restore makes room again", async () => {
    process.env.PROBE_SANDBOX_DISK_MB = '256';
    let small: DockerSandbox;
    try {
      small = await DockerSandbox.create(task);
    } finally {
      delete process.env.PROBE_SANDBOX_DISK_MB;
    }
    try {
      const fill = await small.exec(
        'head -c 400M /dev/zero > big; echo "tree $?"; head -c 200M /dev/zero > /tmp/big; echo "tmp $?"; df -m --output=target,size . /tmp | tail -n 2',
        { timeoutMs: 120_000 },
      );
      expect(fill.output).toMatch(/No space left on device[\s\S]*tree 1\n[\s\S]*No space left on device[\s\S]*tmp 1\n/);
      expect(fill.output).toMatch(/\/testbed\s+192\n\/tmp\s+64\n/);
      // The container's own layer on the host's disk: what it wrote went to tmpfs instead.
      const id = (await small.exec('hostname')).output.trim();
      const [info] = await new Docker().listContainers({ all: true, size: true, filters: { id: [id] } });
      expect((info as { SizeRw?: number }).SizeRw ?? 0).toBeLessThan(2 ** 20);
      await small.restore({ base_commit: task.base_commit, patch: '' });
      expect((await small.exec('head -c 100M /dev/zero > again && echo written')).output).toBe('written\n');
    } finally {
      await small.close();
    }
  });

  it('labels its containers and removes leftovers of a dead run', async () => {
    const docker = new Docker();
    const mine = await docker.listContainers({ filters: { label: ['probe.sandbox'] } });
    expect(mine.some((c) => c.Labels['probe.pid'] === String(process.pid))).toBe(true);
    // A container whose owner process no longer exists, as a run killed with SIGKILL leaves it.
    const orphan = await docker.createContainer({
      Image: BASE_IMAGE,
      Cmd: ['sleep', 'infinity'],
      Labels: { 'probe.sandbox': '1', 'probe.pid': '999999999' },
    });
    await sweepLeftovers(true);
    await expect(orphan.inspect()).rejects.toThrow(/no such container/i);
    expect((await sb.exec('echo alive')).output).toBe('alive\n'); // ours is kept
  });
});

describe.skipIf(skipWithoutDocker)('docker sandbox for an image task (repository owned by root in the image)', () => {
  const repoTask = { ...MISSING_COLON };
  let image: string;
  let task: LoadedTask;
  let sb: DockerSandbox;
  beforeAll(async () => {
    image = await buildRepoImage(repoTask, `probe-test-image-task-${process.pid}`);
    task = { ...repoTask, image, repo_path: undefined, repoDir: undefined };
    sb = await DockerSandbox.create(task);
  });
  afterAll(async () => {
    await sb?.close();
    if (image)
      for (const made of [await layoutImage(new Docker(), image, task.workdir, `${PRISTINE_ROOT}${task.workdir}`), image])
        await new Docker()
          .getImage(made)
          .remove({ force: true })
          .catch(() => {});
  });

  it('hands the tree to the sandbox user and keeps the base aside, read-only', async () => {
    const r = await sb.exec(
      'git rev-parse HEAD && git status --porcelain && stat -c %U . tests .git/HEAD && stat -c %u /opt/probe-pristine/testbed && touch x && rm x && echo editable',
    );
    expect(r.output).toBe(`${task.base_commit}\nsandbox\nsandbox\nsandbox\n0\neditable\n`);
    expect((await sb.exec('touch /opt/probe-pristine/testbed/x')).exitCode).not.toBe(0);
  });

  it('restores states', async () => {
    await sb.writeFile('tests/missing_colon.py', 'changed\n');
    await sb.exec('echo tamper >> .git/config');
    const patch = await sb.diff();
    expect(patch).toContain('+changed');
    await sb.restore({ base_commit: task.base_commit, patch: '' });
    expect(await sb.diff()).toBe('');
    expect((await sb.exec('grep -c tamper .git/config')).output).toBe('0\n');
    await sb.restore({ base_commit: task.base_commit, patch });
    expect(await sb.diff()).toBe(patch);
  });
});

describe.skipIf(skipWithoutDocker || !hasRealData)('replay in docker matches the local sandbox', () => {
  const task = { ...MISSING_COLON };
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
      const [task] = await loadTaskFile(${JSON.stringify(join(REPO_ROOT, 'test/fixtures/tasks/missing-colon/task.json'))});
      await DockerSandbox.create(task);
      console.log('ready');
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) resolve();
      }),
    );
    const docker = new Docker();
    const owned = () => docker.listContainers({ all: true, filters: { label: [`probe.pid=${child.pid}`] } });
    expect(await owned()).toHaveLength(1);
    child.kill('SIGINT');
    await new Promise((resolve) => child.on('exit', resolve));
    expect(await owned()).toHaveLength(0);
  });
});
