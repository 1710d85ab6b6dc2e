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
 * An image as SWE-bench ships them: the base image with the task's repository at its
 * workdir, owned by root. Returns the image's name; `docker image rm` it when done.
 */
export async function buildRepoImage(task: LoadedTask, name: string): Promise<string> {
  const docker = new Docker();
  const container = await docker.createContainer({
    Image: BASE_IMAGE,
    Cmd: ['sleep', 'infinity'],
    NetworkDisabled: true,
    HostConfig: { NetworkMode: 'none' },
  });
  try {
    await container.start();
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
    await container.commit({ repo: name, tag: 'latest' });
  } finally {
    await container.remove({ force: true });
  }
  return `${name}:latest`;
}
