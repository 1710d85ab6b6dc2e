/**
 * Images for tasks that name an `environment` (docs/trajectories.md, "Environments"): the base image with
 * the task's Debian packages installed, built once and kept.
 *
 * - The tag is a content hash of the base image's id and the sorted package list
 *   (`probe-env:<hash>`): any task naming the same packages on the same base reuses it,
 *   across runs, and a rebuilt base image gets new ones.
 * - One build per tag per process (a promise cache; a failed build is not cached), and none
 *   when the tag already exists.
 * - The build is our own `apt-get`, but the package names and the image are the task's,
 *   and maintainer scripts run as root: the build container gets no host network. It runs
 *   in a network namespace of its own whose one way out is probe's proxy to the package
 *   indexes on the allow-list (build-network.ts, build-egress.ts; apt finds it through
 *   http_proxy), as root with Docker's default capabilities (dpkg needs them) less
 *   CAP_NET_RAW and CAP_NET_ADMIN; the sandboxes started from the image keep no network,
 *   no capabilities and an unprivileged user (docker.ts).
 * - Build containers are named `probe-env-build-<hash>-<pid>` (a name, not a label: images
 *   inherit their container's labels); leftovers of a killed run go at the next build.
 */
import { createHash } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { EnvironmentError, ProbeError } from '../errors.ts';
import { BUILD_TIMEOUT_CAP_S, type BuildNetwork, describeEgress, withBuildNetwork } from './build-network.ts';
import { type BuildEgress, DEFAULT_IMAGE_SOURCES } from '../settings/image-sources.ts';
import { processAlive } from '../util/process-alive.ts';
import { OutputCapture } from './output-capture.ts';

const REPOSITORY = 'probe-env';
const BUILD_PREFIX = 'probe-env-build-';
/** Part of the hash: a change to how images are built must not reuse images built the old way. */
const RECIPE = 'apt-get install --no-install-recommends, lists removed; v2 (confined build)';
/** Within the cap on every build (build-network.ts). */
const BUILD_TIMEOUT_S = Math.min(900, BUILD_TIMEOUT_CAP_S);
/** apt's output kept for the error message of a failed build. */
const BUILD_OUTPUT_KEPT = 1024 * 1024;

/**
 * Run as root in the build container, packages as arguments. `--error-on=any`: an archive
 * that cannot be reached fails the update, rather than every package "not found" later.
 */
const INSTALL = [
  'set -e',
  'export DEBIAN_FRONTEND=noninteractive',
  'apt-get -q -o Acquire::Languages=none update --error-on=any',
  'apt-get -q install -y --no-install-recommends -- "$@"',
  'apt-get clean',
  'rm -rf /var/lib/apt/lists/*',
].join('\n');

/** Packages the image's archive does not have (apt's "Unable to locate package"). */
export class MissingPackagesError extends ProbeError {
  constructor(
    readonly packages: string[],
    readonly baseImage: string,
  ) {
    super(`no package ${packages.join(', ')} in the Debian archive of image ${baseImage}`, { exitCode: 2 });
  }
}

/** The derived image's tag: content hash of (recipe, base image id, sorted packages). */
export function environmentTag(baseImageId: string, packages: readonly string[]): string {
  const hash = createHash('sha256')
    .update([RECIPE, baseImageId, ...normalized(packages)].join('\n'))
    .digest('hex');
  return `${REPOSITORY}:${hash.slice(0, 20)}`;
}

function normalized(packages: readonly string[]): string[] {
  return [...new Set(packages)].sort();
}

/** Whether this engine has the image (by name or id). */
export async function imageExists(docker: Docker, image: string): Promise<boolean> {
  return docker
    .getImage(image)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

/** Builds in progress or done in this process, by tag. */
const images = new Map<string, Promise<string>>();
let swept = false;

/**
 * The image a sandbox needing `packages` starts from: `baseImage` itself when there are
 * none, else its derived image, built here unless it exists.
 */
export async function environmentImage(
  docker: Docker,
  baseImage: string,
  packages: readonly string[],
  egress: BuildEgress = DEFAULT_IMAGE_SOURCES.egress,
): Promise<string> {
  if (packages.length === 0) return baseImage;
  const baseId = await imageId(docker, baseImage);
  const tag = environmentTag(baseId, packages);
  let image = images.get(tag);
  if (!image) {
    image = ensureImage(docker, baseImage, baseId, tag, normalized(packages), egress);
    images.set(tag, image);
    image.catch(() => images.delete(tag));
  }
  return image;
}

async function imageId(docker: Docker, image: string): Promise<string> {
  try {
    return (await docker.getImage(image).inspect()).Id;
  } catch (error) {
    throw new EnvironmentError(
      `no Docker image ${image} to build the task's environment from (scripts/docker-base-image.sh builds probe-base)`,
      { cause: error },
    );
  }
}

/** The tag, built now unless this engine has it (leftovers of a killed build swept first). */
async function ensureImage(
  docker: Docker,
  baseImage: string,
  baseId: string,
  tag: string,
  packages: string[],
  egress: BuildEgress,
): Promise<string> {
  if (await imageExists(docker, tag)) return tag;
  await sweepBuildLeftovers(docker);
  await withBuildNetwork(docker, egress, (network) => buildIn(network, docker, baseImage, baseId, tag, packages));
  return tag;
}

async function buildIn(
  network: BuildNetwork,
  docker: Docker,
  baseImage: string,
  baseId: string,
  tag: string,
  packages: string[],
): Promise<void> {
  const [repo, hash] = tag.split(':') as [string, string];
  const container = await docker
    .createContainer({
      name: `${BUILD_PREFIX}${hash}-${process.pid}`,
      Image: baseId,
      Cmd: ['timeout', '-k', '10', String(BUILD_TIMEOUT_S), 'bash', '-c', INSTALL, 'bash', ...packages],
      User: '0:0',
      Env: network.env,
      HostConfig: { NetworkMode: network.networkMode, CapDrop: ['NET_RAW', 'NET_ADMIN'] },
    })
    .catch((error: Error) => {
      throw new ProbeError(`cannot create a build container from image ${baseImage}: ${error.message}`, { cause: error });
    });
  try {
    const output = new OutputCapture(BUILD_OUTPUT_KEPT);
    const stream = (await container.attach({ stream: true, stdout: true, stderr: true })) as Duplex;
    const ended = new Promise<void>((resolve) => {
      stream.on('end', resolve);
      stream.on('close', resolve);
    });
    container.modem.demuxStream(stream, output, output);
    await container.start();
    const [{ StatusCode }] = await Promise.all([container.wait() as Promise<{ StatusCode: number }>, ended]);
    if (StatusCode !== 0) throw buildFailure(output.bytes().toString('utf8'), StatusCode, baseImage, packages, network);
    await container.commit({
      repo,
      tag: hash,
      changes: [`LABEL probe.environment.base="${baseId}" probe.environment.packages="${packages.join(' ')}"`, 'CMD ["bash"]'],
    });
  } finally {
    await container.remove({ force: true }).catch(() => {});
  }
}

function buildFailure(log: string, status: number, baseImage: string, packages: string[], network: BuildNetwork): ProbeError {
  const missing = [...log.matchAll(/^E: (?:Unable to locate package (\S+)|Package '([^']+)' has no installation candidate)/gm)].map(
    (m) => m[1] ?? m[2]!,
  );
  if (missing.length > 0) return new MissingPackagesError([...new Set(missing)], baseImage);
  const tail = log.trim().split('\n').slice(-8).join('\n');
  const why = status === 124 ? `took longer than ${BUILD_TIMEOUT_S} s` : `failed (exit ${status})`;
  return new EnvironmentError(
    `installing ${packages.join(' ')} in a build container from image ${baseImage} ${why}; ${describeEgress(network)}:\n${tail}`,
  );
}

/** Removes build containers whose process is gone (killed mid-build). */
async function sweepBuildLeftovers(docker: Docker): Promise<void> {
  if (swept) return;
  swept = true;
  const containers = await docker.listContainers({ all: true, filters: { name: [BUILD_PREFIX] } });
  await Promise.all(
    containers
      .filter((c) => {
        const pid = Number(/-(\d+)$/.exec(c.Names[0] ?? '')?.[1]);
        return Number.isInteger(pid) && pid !== process.pid && !processAlive(pid);
      })
      .map((c) =>
        docker
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
  );
}
