/**
 * A task's `environment`: refused at load when it cannot be honoured; in Docker, an image
 * derived once with the packages installed (the base image untouched, the jail as strict);
 * in the local sandbox, what the host lacks stated before anything runs.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { BASE_IMAGE, DockerSandbox } from '../src/sandbox/docker.ts';
import { environmentImage, environmentTag } from '../src/sandbox/environment-image.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { commitTree, LocalSandbox } from '../src/sandbox/local.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { environmentPackages } from '../src/schema/environment.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { tempDir } from './helpers/paths.ts';

/** A package name no Debian archive has, so no host has it installed. */
const ABSENT = 'probe-surely-absent-module';
const DEMO_TASK = join(REPO_ROOT, 'verifiers', 'shop__pricing-1', 'task.json');
const DEMO_TRAJECTORY = join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json');

/** The demo task, written elsewhere with an `environment`, beside a copy of its repository (a repo_path stays inside its task set). */
function demoTaskWith(environment: unknown): string {
  const record = JSON.parse(readFileSync(DEMO_TASK, 'utf8')) as Record<string, unknown>;
  const dir = tempDir('probe-env-task-');
  const file = join(dir, 'task.json');
  cpSync(join(REPO_ROOT, 'verifiers', 'shop__pricing-1', String(record.repo_path)), join(dir, String(record.repo_path)), {
    recursive: true,
  });
  writeFileSync(file, JSON.stringify({ ...record, environment }));
  return file;
}

async function loadError(environment: unknown): Promise<InputError> {
  const file = demoTaskWith(environment);
  try {
    await loadTaskFile(file);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message.startsWith(`${file}: field "environment`)).toBe(true);
    return error as InputError;
  }
  throw new Error(`loading ${file} did not fail`);
}

describe('the environment field', () => {
  it('maps pip requirements to the Debian packages that carry them, once each, sorted', () => {
    const packages = environmentPackages({
      debian: ['libxml2', 'python3-numpy'],
      pip: ['NumPy', 'PyYAML', 'scikit_learn', 'pytest-xdist'],
    });
    expect([...packages]).toEqual([
      ['libxml2', 'debian'],
      ['python3-numpy', 'debian'],
      ['python3-pytest-xdist', 'pip "pytest-xdist"'],
      ['python3-sklearn', 'pip "scikit_learn"'],
      ['python3-yaml', 'pip "PyYAML"'],
    ]);
  });

  it('refuses at load what cannot be honoured, naming the file and the field', async () => {
    expect((await loadError({ pip: ['numpy==1.21.0'] })).message).toMatch(
      /field "environment\.pip\.0": "numpy==1\.21\.0" pins a version: .*cannot be honoured; name it alone \("numpy"\)/,
    );
    expect((await loadError({ pip: ['numpy', 'scipy >= 1.5'] })).message).toMatch(
      /field "environment\.pip\.1": "scipy >= 1\.5" pins a version/,
    );
    expect((await loadError({ pip: ['numpy[extra]'] })).message).toMatch(
      /field "environment\.pip\.0": "numpy\[extra\]" is not a bare pip package name/,
    );
    expect((await loadError({ debian: ['python3-numpy=1:1.24.2-1'] })).message).toMatch(
      /field "environment\.debian\.0": .*pins a version.*\("python3-numpy"\)/,
    );
    expect((await loadError({ debian: ['Bad Name'] })).message).toMatch(
      /field "environment\.debian\.0": "Bad Name" is not a Debian package name/,
    );
    expect((await loadError({ apt: ['libxml2'] })).message).toMatch(/field "environment": .*apt/);
  });

  it('is refused through the CLI with exit 2 and one line', () => {
    const file = demoTaskWith({ pip: ['numpy==1.21.0'] });
    expectOneLineError(
      runProbe(['replay', DEMO_TRAJECTORY, '--task', file]),
      new RegExp(`^probe: ${file.replace(/[.\\/]/g, '\\$&')}: field "environment\\.pip\\.0": "numpy==1\\.21\\.0" pins a version`),
    );
  });
});

describe.skipIf(skipWithoutBwrap)('local sandbox: the host must already have the environment', () => {
  it('runs a task whose packages the host has (its tools usable in the jail)', async () => {
    const [task] = await loadTaskFile(demoTaskWith({ debian: ['git'], pip: ['pytest'] }));
    const sb = await openSandbox('local', task!);
    try {
      const r = await sb.exec('python3 -c "import pytest; print(pytest.__name__)" && git --version');
      expect(r.output).toMatch(/^pytest\ngit version /);
    } finally {
      await sb.close();
    }
  });

  it('states what is missing and the fix when the sandbox opens, before anything runs', async () => {
    const file = demoTaskWith({ debian: ['git'], pip: [ABSENT] });
    const [task] = await loadTaskFile(file);
    const error = await LocalSandbox.create(task!).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(
      `${file}: field "environment": the local sandbox runs on this host's /usr, which lacks python3-${ABSENT} (pip "${ABSENT}"); ` +
        `install them (apt-get install python3-${ABSENT}) or use --sandbox docker, which builds an image with them`,
    );
    // The same line, exit 2, from the CLI.
    expectOneLineError(
      runProbe(['replay', DEMO_TRAJECTORY, '--task', file, '--sandbox', 'local']),
      /field "environment": .*lacks python3-probe-surely-absent-module .*apt-get install .*--sandbox docker/,
    );
  });
});

describe.skipIf(skipWithoutDocker)('docker sandbox: a derived image per environment', () => {
  const docker = new Docker();
  let dir: string;
  let tag: string;
  let started: number;

  /** A repository whose one test imports numpy, and a task record for it naming `environment`. */
  async function numpyTask(environment: unknown, name: string): Promise<LoadedTask> {
    const file = join(dir, `${name}.json`);
    writeFileSync(
      file,
      JSON.stringify({
        instance_id: `env__numpy-${name}`,
        problem_statement: 'numpy must be importable',
        base_commit: baseCommit,
        FAIL_TO_PASS: ['test_numpy.py::test_sum'],
        test_cmd: 'python3 -m pytest -rA -p no:cacheprovider test_numpy.py',
        log_parser: 'pytest',
        repo_path: 'repo',
        environment,
      }),
    );
    return (await loadTaskFile(file))[0]!;
  }
  let baseCommit: string;

  /** Commits of images named `tag` since the test began (a build ends in exactly one). */
  async function commitsOfTag(): Promise<number> {
    const stream = await docker.getEvents({
      since: started,
      until: Math.ceil(Date.now() / 1000) + 1,
      filters: { type: ['container'], event: ['commit'] },
    });
    let text = '';
    for await (const chunk of stream as AsyncIterable<Buffer>) text += chunk.toString('utf8');
    return text
      .split('\n')
      .filter(
        (line) => line.trim() && (JSON.parse(line) as { Actor: { Attributes: Record<string, string> } }).Actor.Attributes.imageRef === tag,
      ).length;
  }

  /** The image id the sandbox's container runs (found by the labels docker.ts gives it). */
  async function containerImage(task: LoadedTask): Promise<string[]> {
    const containers = await docker.listContainers({ filters: { label: [`probe.task=${task.instance_id}`, `probe.pid=${process.pid}`] } });
    return containers.map((c) => c.ImageID);
  }

  beforeAll(async () => {
    dir = tempDir('probe-env-docker-');
    mkdirSync(join(dir, 'repo'));
    writeFileSync(join(dir, 'repo', 'test_numpy.py'), 'import numpy\n\n\ndef test_sum():\n    assert int(numpy.arange(4).sum()) == 6\n');
    baseCommit = commitTree(join(dir, 'repo'));
    tag = environmentTag((await docker.getImage(BASE_IMAGE).inspect()).Id, ['python3-numpy']);
    // Built here, whatever an earlier run left: the test is about the build.
    await docker
      .getImage(tag)
      .remove()
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 404) throw error;
      });
    started = Math.floor(Date.now() / 1000) - 1;
  }, 60_000);

  afterAll(async () => {
    await docker
      .getImage(tag)
      .remove()
      .catch(() => {});
  });

  it('builds the image once for requests made together, and the tests pass in it', async () => {
    const task = await numpyTask({ pip: ['numpy'] }, 'pip');
    const clock = Date.now();
    // A sandbox and, at the same moment, the request a second sandbox of the task would make.
    const [sb, concurrent] = await Promise.all([DockerSandbox.create(task), environmentImage(docker, BASE_IMAGE, ['python3-numpy'])]);
    try {
      const image = await docker.getImage(tag).inspect();
      console.log(
        `derived image ${tag}: built in ${((Date.parse(image.Created) - clock) / 1000).toFixed(1)} s, sandbox open in ${((Date.now() - clock) / 1000).toFixed(1)} s`,
      );
      expect(concurrent).toBe(tag);
      expect(image.Config.Labels).toMatchObject({ 'probe.environment.packages': 'python3-numpy' });
      expect(await containerImage(task)).toEqual([image.Id]);
      expect(await commitsOfTag()).toBe(1);
      const r = await sb.exec(task.test_cmd);
      expect(r.exitCode, r.output).toBe(0);
      expect(r.output).toContain('PASSED test_numpy.py::test_sum');
      // The jail is the same in the derived image: no network, an unprivileged uid, no capabilities.
      const jail = await sb.exec(
        `id -u; grep CapEff /proc/self/status; python3 -c "import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)"`,
      );
      const [uid, caps] = jail.output.split('\n');
      expect(Number(uid)).toBeGreaterThanOrEqual(200_000);
      expect(caps).toBe('CapEff:\t0000000000000000');
      expect(jail.output).toMatch(/Network is unreachable/);
    } finally {
      await sb.close();
    }
  }, 300_000);

  it('reuses the image for another task naming the same packages, and leaves the base image without them', async () => {
    const task = await numpyTask({ debian: ['python3-numpy'] }, 'debian');
    // A container of the base image alongside (under the vfs storage driver each container is a full copy: slow).
    const baseLacksNumpy = (async () => {
      const base = await docker.createContainer({
        Image: BASE_IMAGE,
        Cmd: ['python3', '-c', 'import numpy'],
        NetworkDisabled: true,
        HostConfig: { NetworkMode: 'none' },
      });
      try {
        await base.start();
        return ((await base.wait()) as { StatusCode: number }).StatusCode !== 0;
      } finally {
        await base.remove({ force: true });
      }
    })();
    const sb = await DockerSandbox.create(task);
    try {
      expect(await containerImage(task)).toEqual([(await docker.getImage(tag).inspect()).Id]);
      expect((await sb.exec(task.test_cmd)).exitCode).toBe(0);
      expect(await commitsOfTag()).toBe(1);
    } finally {
      await sb.close();
    }
    expect(await baseLacksNumpy).toBe(true);
  }, 120_000);

  it('names a package the Debian archive lacks as an input error on the task, and keeps no image', async () => {
    const task = await numpyTask({ pip: [ABSENT] }, 'absent');
    const error = await DockerSandbox.create(task).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(
      `${task.file}: field "environment": the Debian archive image ${BASE_IMAGE} installs from has no python3-${ABSENT} (pip "${ABSENT}"); name the Debian package that provides it under environment.debian`,
    );
    const baseId = (await docker.getImage(BASE_IMAGE).inspect()).Id;
    expect(
      await docker
        .getImage(environmentTag(baseId, [`python3-${ABSENT}`]))
        .inspect()
        .then(
          () => true,
          () => false,
        ),
    ).toBe(false);
    expect(await containerImage(task)).toEqual([]);
  }, 120_000);
});
