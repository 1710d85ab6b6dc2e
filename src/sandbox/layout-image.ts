/**
 * An image-only task's image with its repository moved aside, so that the sandbox's workdir
 * can be a size-capped tmpfs (docker.ts): the image holds the repository at the workdir
 * (`/testbed`), and a tmpfs mounted there would hide it. This image holds it, root's and
 * read-only to others, at `${PRISTINE_ROOT}${workdir}` instead, where `restore` copies it from.
 *
 * Made once per image and workdir, by a container of the task's image that runs only probe's
 * own `mv` (no network, no capability: root owns what it moves), committed as
 * `probe-layout:<hash>` of the image's id, the workdir and the recipe; a tag already there is
 * reused. Build containers are named `probe-layout-build-<hash>-<pid>`, removed when done.
 */
import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { ProbeError } from '../errors.ts';
import { imageExists } from './environment-image.ts';
import { OutputCapture } from './output-capture.ts';

const REPOSITORY = 'probe-layout';
/** Part of the hash: a change to the layout must not reuse images made the old way. */
const RECIPE = 'the workdir moved to the pristine root; v1';
/** Run as `bash -c MOVE bash WORKDIR PRISTINE`. */
const MOVE = [
  'set -e',
  'test -d "$1/.git" || { echo "no git repository at $1 in the image"; exit 1; }',
  'mkdir -p "$(dirname "$2")"',
  'mv "$1" "$2"',
].join('\n');

const made = new Map<string, Promise<string>>();

/** The layout image of `image` for a repository at `workdir` whose pristine copy belongs at `pristine`. */
export function layoutImage(docker: Docker, image: string, workdir: string, pristine: string): Promise<string> {
  const key = `${image}\0${workdir}`;
  let pending = made.get(key);
  if (!pending) {
    pending = make(docker, image, workdir, pristine);
    made.set(key, pending);
    pending.catch(() => made.delete(key));
  }
  return pending;
}

async function make(docker: Docker, image: string, workdir: string, pristine: string): Promise<string> {
  const { Id: id, Config: config } = await docker
    .getImage(image)
    .inspect()
    .catch((error: Error) => {
      throw new ProbeError(`cannot create a container from image ${image}: ${error.message}`, { cause: error });
    });
  const hash = createHash('sha256').update([RECIPE, id, workdir, pristine].join('\n')).digest('hex').slice(0, 20);
  const tag = `${REPOSITORY}:${hash}`;
  if (await imageExists(docker, tag)) return tag;
  // Started as every sandbox is (`sleep`, the image's entrypoint untouched); the move is an exec, so the committed config stays the image's.
  const container = await docker.createContainer({
    name: `${REPOSITORY}-build-${hash}-${process.pid}`,
    Image: id,
    Cmd: ['sleep', 'infinity'],
    NetworkDisabled: true,
    HostConfig: { NetworkMode: 'none', CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] },
  });
  try {
    await container.start();
    const exec = await container.exec({
      Cmd: ['bash', '-c', MOVE, 'bash', workdir, pristine],
      User: '0:0',
      WorkingDir: '/',
      AttachStdout: true,
      AttachStderr: true,
    });
    const stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
    const output = new OutputCapture(64 * 1024);
    container.modem.demuxStream(stream, output, output);
    await new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
    });
    const { ExitCode } = await exec.inspect();
    if (ExitCode !== 0)
      throw new ProbeError(
        `cannot move image ${image}'s repository aside (exit ${ExitCode}): ${output.bytes().toString('utf8').trim().slice(0, 300)}`,
      );
    await container.commit({ repo: REPOSITORY, tag: hash, ...(config.Cmd ? { changes: [`CMD ${JSON.stringify(config.Cmd)}`] } : {}) });
    return tag;
  } finally {
    await container.remove({ force: true }).catch(() => {});
  }
}
