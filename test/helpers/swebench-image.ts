/**
 * A SWE-bench-layout image built here (no registry is reachable): the base image plus the
 * task's repository at /testbed (a git repository at the row's base commit, from a fixture
 * `.git`) in the derived image of the Debian packages the tests need, and `/opt/miniconda3/bin/activate` — a shim whose
 * `conda activate testbed` puts that environment's bin first on PATH, which is all the
 * harness's evaluation script asks of conda. Cached by tag: a recipe hash is kept as a label
 * and the image is rebuilt only when it changes.
 */
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import tar from 'tar-stream';
import { BASE_IMAGE } from '../../src/sandbox/docker.ts';
import { environmentImage } from '../../src/sandbox/environment-image.ts';

const RECIPE_LABEL = 'probe.test-recipe';

/** What `source /opt/miniconda3/bin/activate` defines. */
const ACTIVATE_SHIM = `# conda, as far as SWE-bench's evaluation script uses it (a test shim, not conda).
conda() {
  if [ "$1" = activate ] && [ -d "/opt/miniconda3/envs/\${2:-base}/bin" ]; then
    export CONDA_DEFAULT_ENV="\${2:-base}" PATH="/opt/miniconda3/envs/\${2:-base}/bin:$PATH"
  else
    echo "conda shim: only 'conda activate ENV' of an existing ENV" >&2; return 1
  fi
}
`;

/**
 * The `testbed` environment: the system Python, and `pytest` run as `python -m pytest` so
 * /testbed is importable as the harness's editable install makes it.
 */
const SETUP = `set -e
mkdir -p /opt/miniconda3/bin /opt/miniconda3/envs/testbed/bin /testbed
printf '%s' "$ACTIVATE_SHIM" > /opt/miniconda3/bin/activate
ln -s /usr/bin/python3 /opt/miniconda3/envs/testbed/bin/python
printf '#!/bin/sh\\nexec /opt/miniconda3/envs/testbed/bin/python -m pytest "$@"\\n' > /opt/miniconda3/envs/testbed/bin/pytest
chmod 0755 /opt/miniconda3/envs/testbed/bin/pytest
`;
const CHECKOUT = 'set -e\ncd /testbed\ngit checkout -q -f HEAD\ntest -z "$(git status --porcelain)"\ngit rev-parse HEAD';

async function run(container: Docker.Container, script: string, env: string[] = []): Promise<string> {
  const exec = await container.exec({ Cmd: ['bash', '-c', script], Env: env, AttachStdout: true, AttachStderr: true, User: '0:0' });
  const stream = await exec.start({ hijack: true, stdin: false });
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  const { ExitCode } = await exec.inspect();
  // Demultiplex: 8-byte frame headers before each chunk of output.
  const raw = Buffer.concat(chunks);
  const out: Buffer[] = [];
  for (let i = 0; i + 8 <= raw.length; ) {
    const size = raw.readUInt32BE(i + 4);
    out.push(raw.subarray(i + 8, i + 8 + size));
    i += 8 + size;
  }
  const text = Buffer.concat(out).toString('utf8');
  if (ExitCode !== 0) throw new Error(`image build step failed (exit ${ExitCode}): ${text.slice(-2000)}`);
  return text;
}

export interface SwebenchImageSpec {
  /** The image's name, as the harness names it. */
  name: string;
  /** A tar holding `.git` of the repository at the base commit (HEAD). */
  gitTar: string;
  /** Debian packages the tests need. */
  packages: string[];
  /** Files to add, by absolute path (root's, world-readable). */
  files?: { path: string; content: Buffer | string }[];
}

function filesTar(files: { path: string; content: Buffer | string }[]): Readable {
  const pack = tar.pack();
  for (const f of files) pack.entry({ name: f.path.replace(/^\//, ''), mode: 0o644, uid: 0, gid: 0 }, Buffer.from(f.content));
  pack.finalize();
  return pack as unknown as Readable;
}

/** Builds (or finds, by tag and recipe) the image; returns its name and whether it was built now. */
export async function swebenchTestImage(spec: SwebenchImageSpec): Promise<{ name: string; built: boolean }> {
  const docker = new Docker();
  // The Debian packages come as a task's environment would bring them: a derived image, built once.
  const base = await docker.getImage(await environmentImage(docker, BASE_IMAGE, spec.packages)).inspect();
  const hash = createHash('sha256')
    .update(JSON.stringify([base.Id, ACTIVATE_SHIM, SETUP, CHECKOUT]))
    .update(readFileSync(spec.gitTar));
  for (const f of spec.files ?? []) hash.update(f.path).update(f.content);
  const recipe = hash.digest('hex');
  const existing = await docker
    .getImage(spec.name)
    .inspect()
    .catch(() => null);
  if (existing?.Config?.Labels?.[RECIPE_LABEL] === recipe) return { name: spec.name, built: false };
  const container = await docker.createContainer({ Image: base.Id, Cmd: ['sleep', 'infinity'], HostConfig: { NetworkMode: 'none' } });
  try {
    await container.start();
    await run(container, SETUP, [`ACTIVATE_SHIM=${ACTIVATE_SHIM}`]);
    await container.putArchive(createReadStream(spec.gitTar), { path: '/testbed' });
    await run(container, CHECKOUT);
    if (spec.files?.length) await container.putArchive(filesTar(spec.files), { path: '/' });
    const [repo, tag = 'latest'] = spec.name.split(/:(?=[^/]*$)/);
    await container.commit({ repo, tag, changes: [`LABEL ${RECIPE_LABEL}=${recipe}`] });
  } finally {
    await container.remove({ force: true });
  }
  return { name: spec.name, built: true };
}
