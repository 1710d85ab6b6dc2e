/**
 * Docker-backed tests run whenever a daemon answers; with PROBE_REQUIRE_DOCKER set (CI),
 * a missing daemon fails them instead of skipping.
 */
import { spawn } from 'node:child_process';
import Docker from 'dockerode';
import { BASE_IMAGE, dockerAvailable } from '../../src/sandbox/docker.ts';
import { checkoutTemplate } from '../../src/sandbox/local.ts';
import type { LoadedTask } from '../../src/schema/task.ts';

export const dockerUp = await dockerAvailable();
if (!dockerUp && process.env.PROBE_REQUIRE_DOCKER) {
  throw new Error('PROBE_REQUIRE_DOCKER is set but no Docker engine answers');
}
export const skipWithoutDocker = !dockerUp;

/**
 * A new image `name:latest` from `base`: `prepare` works on a running container of it (as
 * root, with the engine's default rights, network off), which is then committed with
 * Dockerfile `changes` (`ENV X=1`). Returns the image's name; `docker image rm` it when done.
 */
export async function commitImage(
  base: string,
  name: string,
  prepare: (container: Docker.Container) => Promise<void>,
  changes: string[] = [],
): Promise<string> {
  const docker = new Docker();
  const container = await docker.createContainer({
    Image: base,
    Cmd: ['sleep', 'infinity'],
    NetworkDisabled: true,
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    await container.start();
    await prepare(container);
    await container.commit({ repo: name, tag: 'latest', ...(changes.length ? { changes } : {}) });
  } finally {
    await container.remove({ force: true });
  }
  return `${name}:latest`;
}

/** An image as SWE-bench ships them: the base image with the task's repository at its workdir, owned by root. */
export function buildRepoImage(task: LoadedTask, name: string): Promise<string> {
  return commitImage(BASE_IMAGE, name, async (container) => {
    const checkout = spawn(
      'tar',
      [
        '-C',
        checkoutTemplate(task),
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--transform',
        `s,^\\.,${task.workdir.slice(1)},`,
        '-c',
        '.',
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await container.putArchive(checkout.stdout, { path: '/' });
  });
}
