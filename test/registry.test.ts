/**
 * Images a task names, pulled from a real registry (Debian's docker-registry on loopback,
 * standing in for ghcr.io and Docker Hub through `--registry-mirror`): a Harbor task's FROM,
 * a SWE-bench row's image, the digests recorded, and the Debian stand-in with its notice
 * where nothing answers.
 */
import { randomUUID } from 'node:crypto';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_IMAGE_SOURCES, type ImageSources } from '../src/settings/image-sources.ts';
import { BASE_IMAGE, client, DockerSandbox } from '../src/sandbox/docker.ts';
import { parseReference } from '../src/sandbox/registry.ts';
import { harnessImageName } from '../src/swebench/image-name.ts';
import { terminalImage } from '../src/terminal/image.ts';
import { loadTerminalTask } from '../src/terminal/task.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';
import type { OracleRow } from '../src/terminal/oracle.ts';
import { expectOneLineError, runProbe, runProbeAsync } from './helpers/cli.ts';
import { commitImage, skipWithoutDocker } from './helpers/docker.ts';
import { type PackageIndex, serveIndex } from './helpers/package-index.ts';
import { tempDir } from './helpers/paths.ts';
import { type LoopbackRegistry, skipWithoutRegistry, startRegistry, untag } from './helpers/registry.ts';
import { swebenchTestImage } from './helpers/swebench-image.ts';

describe('image references', () => {
  it('are split as Docker splits them: registry, path (library/ for Docker Hub), tag, digest', () => {
    expect(parseReference('python:3.11')).toEqual({ registry: 'docker.io', path: 'library/python', tag: '3.11' });
    expect(parseReference('swebench/sweb.eval.x86_64.a_1776_b-1:latest')).toEqual({
      registry: 'docker.io',
      path: 'swebench/sweb.eval.x86_64.a_1776_b-1',
      tag: 'latest',
    });
    expect(parseReference('ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624')).toEqual({
      registry: 'ghcr.io',
      path: 'laude-institute/t-bench/ubuntu-24-04',
      tag: '20250624',
    });
    expect(parseReference('localhost:5000/a/b')).toEqual({ registry: 'localhost:5000', path: 'a/b' });
    expect(parseReference(`ubuntu@sha256:${'a'.repeat(64)}`)).toEqual({
      registry: 'docker.io',
      path: 'library/ubuntu',
      digest: `sha256:${'a'.repeat(64)}`,
    });
    // Not references a registry serves: nothing is pulled for them.
    for (const name of ['$BASE', 'Upper/case', 'a//b', 'x@sha256:short', '']) expect(parseReference(name)).toBeUndefined();
  });

  it('--registry-mirror and the index flags refuse what they cannot use, naming the flag (exit 2)', () => {
    const bad = [
      ['--registry-mirror', 'ghcr.io'],
      ['--registry-mirror', 'ghcr.io=ftp://mirror'],
      ['--pip-index-url', 'http://user:secret@pypi.lab/simple'],
      ['--apt-mirror', 'https://archive.ubuntu.com/ubuntu/=http://m/ubuntu/'],
    ];
    for (const args of bad) {
      const run = runProbe(['asap', '--env', 'terminal', ...args]);
      expect(run.code, args.join(' ')).toBe(2);
      expectOneLineError(run, new RegExp(args[0]!));
    }
  });
});

/**
 * A task in the style of a generated Harbor 2.0 set: FROM a registry's name, `pip install` of a
 * pinned version (`pip` true), a data file COPYed in.
 */
function generatedTask(from: string, pip = false): string {
  const dir = join(tempDir(), 'count-rows');
  mkdirSync(join(dir, 'environment'), { recursive: true });
  mkdirSync(join(dir, 'tests'));
  mkdirSync(join(dir, 'solution'));
  writeFileSync(join(dir, 'task.toml'), 'version = "1.0"\n[environment]\nbuild_timeout_sec = 600\n');
  writeFileSync(join(dir, 'instruction.md'), 'Write the number of rows of /app/data.csv to /app/count.txt.\n');
  writeFileSync(
    join(dir, 'environment', 'Dockerfile'),
    // (A fresh ENV line before pip's step: the builder's cache of an earlier run's step would ask the index nothing.)
    `FROM ${from}\nWORKDIR /app\n${pip ? `ENV TEST_RUN=${randomUUID()}\nRUN pip install probe-pinned==1.0.0\n` : ''}COPY data.csv /app/data.csv\n`,
  );
  writeFileSync(join(dir, 'environment', 'data.csv'), 'a,b\n1,2\n3,4\n');
  writeFileSync(
    join(dir, 'tests', 'test.sh'),
    [
      '#!/bin/bash',
      // The pinned version, not the newest the index holds.
      pip
        ? `python3 -c "import probe_pinned; assert probe_pinned.VERSION == '1.0.0'" || { echo 0 > /logs/verifier/reward.txt; exit 0; }`
        : '',
      'if [ "$(cat /app/count.txt)" = 3 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi',
      '',
    ].join('\n'),
  );
  writeFileSync(join(dir, 'solution', 'solve.sh'), '#!/bin/bash\nwc -l < /app/data.csv | tr -d " " > /app/count.txt\n');
  return dir;
}

const T_BENCH = 'ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624';

describe.skipIf(skipWithoutDocker || skipWithoutRegistry)('pulling through a registry mirror', () => {
  let registry: LoopbackRegistry;
  let mirrored: ImageSources;

  beforeAll(async () => {
    registry = await startRegistry();
    // The set's base image, served by the registry under the path ghcr.io serves it at (the Debian stand-in's bytes).
    registry.push(BASE_IMAGE, 'laude-institute/t-bench/ubuntu-24-04:20250624');
    mirrored = {
      ...DEFAULT_IMAGE_SOURCES,
      registry: {
        pull: 'missing',
        mirrors: new Map([
          ['ghcr.io', registry.host],
          ['docker.io', registry.host],
        ]),
      },
    };
  }, 300_000);
  afterAll(async () => {
    // The mirror's names the engine tagged as it pulled go with the registry.
    untag(T_BENCH, ...(registry ? [`${registry.host}/laude-institute/t-bench/ubuntu-24-04:20250624`] : []));
    await registry?.stop();
  });

  it("a task's FROM is pulled through the mirror, kept as written, and its digest recorded; offline it falls back with the notice", async () => {
    untag(T_BENCH);
    const docker = client();
    const image = await terminalImage(docker, loadTerminalTask(generatedTask(T_BENCH)), mirrored);
    expect(image.notes).toEqual([]);
    expect(image.bases).toEqual([
      {
        name: T_BENCH,
        origin: 'pulled',
        pulled_from: `${registry.host}/laude-institute/t-bench/ubuntu-24-04:20250624`,
        id: expect.stringMatching(/^sha256:/),
        // Every registry that served these bytes is named (an image pushed earlier elsewhere has more).
        digests: expect.arrayContaining([
          expect.stringMatching(new RegExp(`^${registry.host}/laude-institute/t-bench/ubuntu-24-04@sha256:[0-9a-f]{64}$`)),
        ]),
      },
    ]);
    // The registry's manifest digest is the one recorded.
    const manifest = await fetch(`http://${registry.host}/v2/laude-institute/t-bench/ubuntu-24-04/manifests/20250624`, {
      headers: { accept: 'application/vnd.docker.distribution.manifest.v2+json' },
    });
    expect(image.bases[0]!.digests).toContain(
      `${registry.host}/laude-institute/t-bench/ubuntu-24-04@${manifest.headers.get('docker-content-digest')}`,
    );
    // The name as written finds it: the build kept the FROM.
    expect((await docker.getImage(T_BENCH).inspect()).Id).toBe(image.bases[0]!.id);

    // Neither the image nor a registry: the stand-in, and the notice says why.
    untag(T_BENCH);
    const offline = await terminalImage(docker, loadTerminalTask(generatedTask(T_BENCH)), {
      ...DEFAULT_IMAGE_SOURCES,
      registry: { pull: 'missing', mirrors: new Map() },
    });
    expect(offline.bases).toEqual([]);
    expect(offline.notes).toEqual([
      expect.stringMatching(/^FROM ghcr\.io\/laude-institute\/t-bench\/ubuntu-24-04:20250624 → probe-base:bookworm \(.*ghcr\.io/),
    ]);
    const never = await terminalImage(docker, loadTerminalTask(generatedTask(T_BENCH)), {
      ...DEFAULT_IMAGE_SOURCES,
      registry: { pull: 'never', mirrors: mirrored.registry.mirrors },
    });
    expect(never.notes).toEqual([`FROM ${T_BENCH} → probe-base:bookworm (not on this engine, and --pull never)`]);
  }, 600_000);

  it('a task.toml docker_image is pulled through the mirror; one no registry serves is refused naming the field', async () => {
    untag(T_BENCH);
    const dir = generatedTask(T_BENCH);
    rmSync(join(dir, 'environment', 'Dockerfile'));
    writeFileSync(join(dir, 'task.toml'), `[environment]\ndocker_image = "${T_BENCH}"\n`);
    const docker = client();
    const image = await terminalImage(docker, loadTerminalTask(dir), mirrored);
    expect(image.bases.map((b) => [b.name, b.origin])).toEqual([[T_BENCH, 'pulled']]);
    cpSync(dir, `${dir}-missing`, { recursive: true });
    writeFileSync(join(`${dir}-missing`, 'task.toml'), '[environment]\ndocker_image = "ghcr.io/nobody/nothing:1"\n');
    await expect(terminalImage(docker, loadTerminalTask(`${dir}-missing`), mirrored)).rejects.toThrow(
      /task\.toml: field "environment\.docker_image": this Docker engine has no image ghcr\.io\/nobody\/nothing:1 and it could not be pulled \(pulling 127\.0\.0\.1:\d+\/nobody\/nothing:1 failed/,
    );
  }, 300_000);

  it("a pulled base image's ONBUILD triggers are refused: they would run before any step of the confinement", async () => {
    const local = await commitImage(BASE_IMAGE, `probe-test-onbuild-${process.pid}`, async () => {}, ['ONBUILD RUN touch /onbuild-ran']);
    registry.push(local, 'laude-institute/onbuild:1');
    untag(local, `${registry.host}/laude-institute/onbuild:1`, 'ghcr.io/laude-institute/onbuild:1');
    const dir = generatedTask('ghcr.io/laude-institute/onbuild:1');
    await expect(terminalImage(client(), loadTerminalTask(dir), mirrored)).rejects.toThrow(
      /environment\/Dockerfile: field "FROM": image ghcr\.io\/laude-institute\/onbuild:1 carries ONBUILD triggers \("RUN touch \/onbuild-ran"\)/,
    );
    untag('ghcr.io/laude-institute/onbuild:1', `${registry.host}/laude-institute/onbuild:1`);
  }, 300_000);

  it("a SWE-bench row's image is pulled from the registry and the sandbox runs in it", async () => {
    const [row] = await loadTaskFile(join(import.meta.dirname, 'fixtures', 'swebench', 'pydicom__pydicom-1458.json'));
    const built = await swebenchTestImage({
      name: row!.image!,
      gitTar: join(import.meta.dirname, 'fixtures', 'swebench', 'pydicom-8da0b9b.git.tar'),
      packages: ['python3-numpy', 'python3-requests'],
    });
    // The row as `--image-namespace probetest` names it: an image this engine lacks, on the mirror's Docker Hub.
    const name = harnessImageName(row!.instance_id, 'probetest');
    untag(name);
    registry.push(built.name, name);
    const task = { ...row!, image: name };
    const sandbox = await DockerSandbox.create(task, { imageSources: mirrored });
    try {
      const head = await sandbox.exec('git rev-parse HEAD');
      expect(head.output.trim()).toBe(row!.base_commit);
    } finally {
      await sandbox.close();
    }
    const info = await client().getImage(name).inspect();
    expect(info.RepoDigests).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${registry.host}/probetest/sweb\\.eval\\.x86_64\\.pydicom_1776_pydicom-1458@sha256:`)),
      ]),
    );
    untag(name, `${registry.host}/${name}`);
    // Without the mirror nothing answers: one line naming the row's image field.
    await expect(
      DockerSandbox.create(task, { imageSources: { ...mirrored, registry: { pull: 'missing', mirrors: new Map() } } }),
    ).rejects.toThrow(
      /pydicom__pydicom-1458\.json: field "image": this Docker engine has no image probetest\/sweb\.eval\.x86_64\.pydicom_1776_pydicom-1458:latest and it could not be pulled/,
    );
  }, 600_000);
});

describe.skipIf(skipWithoutDocker || skipWithoutRegistry)("a generated set's task, as written, in an oracle run", () => {
  let registry: LoopbackRegistry;
  let index: PackageIndex;

  beforeAll(async () => {
    registry = await startRegistry();
    registry.push(BASE_IMAGE, 'laude-institute/t-bench/ubuntu-24-04:20250624');
    index = await serveIndex();
  }, 300_000);
  afterAll(async () => {
    untag(T_BENCH, ...(registry ? [`${registry.host}/laude-institute/t-bench/ubuntu-24-04:20250624`] : []));
    await index?.close();
    await registry?.stop();
  });

  it('builds FROM the registry name with pip reaching the loopback index, and its reference solution resolves', async () => {
    untag(T_BENCH);
    const dir = generatedTask(T_BENCH, true);
    const run = await runProbeAsync(
      ['task', 'check', '--terminal', dir, '--registry-mirror', `ghcr.io=http://${registry.host}`, '--pip-index-url', index.url, '--json'],
      {},
      600_000,
    );
    expect(run.code, run.stderr).toBe(0);
    const [row] = JSON.parse(run.stdout) as OracleRow[];
    expect(row).toMatchObject({ task: 'count-rows', resolved: true, reward: 1, notes: [] });
    expect(row!.base_images).toEqual([
      expect.objectContaining({
        name: T_BENCH,
        origin: 'pulled',
        pulled_from: `${registry.host}/laude-institute/t-bench/ubuntu-24-04:20250624`,
      }),
    ]);
    // pip asked the index for the pinned file, through probe's proxy.
    expect(index.hits).toContain('GET /files/probe_pinned-1.0.0-py3-none-any.whl');
    expect(index.hits).not.toContain('GET /files/probe_pinned-2.0.0-py3-none-any.whl');
  }, 600_000);

  it('with neither registry nor index reachable: the stand-in with its notice, and the pip step fails naming itself and the blocked destination', async () => {
    untag(T_BENCH);
    const dir = generatedTask(T_BENCH, true);
    const open = await runProbeAsync(['task', 'check', '--terminal', dir, '--json'], {}, 600_000);
    expect(open.code, open.stderr).toBe(1);
    const [row] = JSON.parse(open.stdout) as OracleRow[];
    expect(row!.notes).toEqual([
      expect.stringMatching(
        /^FROM ghcr\.io\/laude-institute\/t-bench\/ubuntu-24-04:20250624 → probe-base:bookworm \(ghcr\.io did not answer/,
      ),
    ]);
    expect(row!.reason).toMatch(
      /^the image did not build: .*failed at RUN pip install probe-pinned==1\.0\.0 \(exit code 1\);.*pypi\.org:443/,
    );
    // Offline, the proxy refuses PyPI outright, and says so; the table prints the notice.
    const closed = await runProbeAsync(['task', 'check', '--terminal', dir, '--no-public-indexes'], {}, 600_000);
    expect(closed.code, closed.stderr).toBe(1);
    expect(closed.stderr).toMatch(/failed at RUN pip install probe-pinned==1\.0\.0 \(exit code 1\);.*refused CONNECT pypi\.org:443/);
    expect(closed.stderr).toMatch(
      /\nBuilt on the stand-in: count-rows: FROM ghcr\.io\/laude-institute\/t-bench\/ubuntu-24-04:20250624 → probe-base:bookworm \(/,
    );
  }, 600_000);
});
