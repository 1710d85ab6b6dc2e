/**
 * Images a task names, pulled from their registry where this engine lacks them (issue 38):
 * a Dockerfile's FROM, task.toml's docker_image, a SWE-bench row's image.
 *
 * - The pull is the engine's (it holds the registry credentials and the insecure-registry
 *   list a lab configured), asked for one reference at a time, with progress.
 * - `--registry-mirror HOST=MIRROR` pulls `HOST/path:tag` as `MIRROR/path:tag` (a
 *   pull-through cache) and tags it with its own name, so a Dockerfile's FROM and a
 *   container's Image find it as written.
 * - Every image had is described as a `BaseImage`: the name, whether it was pulled now and
 *   from where, the local id and the manifest digests registries served it under. A run's
 *   record carries it, so a number says which bytes it ran on.
 * - A registry the task names (not a mirror the user named) that is `localhost`, an address
 *   literal or a name resolving to a loopback, private or link-local address is not dialled:
 *   the engine pulls over the host's network and speaks plain HTTP to loopback, so such a
 *   name would send it to a service of the host or the lab. The user names one to allow it.
 * - A registry that does not answer (no route, no name, refused, idle past PULL_IDLE_MS) is
 *   remembered for the process: a set of 3,566 tasks naming one base image asks it once.
 *   The caller decides what a failed pull means (a FROM falls back to the Debian stand-in,
 *   a docker_image is an error).
 */
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { describeCause } from '../errors.ts';
import { forbiddenAddress, type Resolve, systemResolve } from './build-egress.ts';
import type { RegistrySettings } from '../settings/image-sources.ts';

/** No progress event for this long and the pull is given up (a registry that stopped answering mid-layer). */
const PULL_IDLE_MS = 120_000;
const DOCKER_HUB = 'docker.io';

/** An image reference split as Docker's reference package splits it (docker/distribution/reference). */
export interface ImageReference {
  /** `docker.io`, `ghcr.io`, `127.0.0.1:5000`. */
  registry: string;
  /** The repository path inside it (`library/python`, `laude-institute/t-bench/ubuntu-24-04`). */
  path: string;
  tag?: string;
  digest?: string;
}

const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-f0-9]{32,}$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

/** `repository[:tag]` split at the tag's colon: one after the last `/` (a registry's port comes before it). */
function splitTag(name: string): { repository: string; tag?: string } {
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? { repository: name.slice(0, colon), tag: name.slice(colon + 1) } : { repository: name };
}

/** The reference `name`, or undefined when it is not one (a stage name, an id, a variable). */
export function parseReference(name: string): ImageReference | undefined {
  let rest = name;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) return undefined;
  }
  const { repository, tag } = splitTag(rest);
  if (tag !== undefined && !TAG.test(tag)) return undefined;
  const parts = repository.split('/');
  const first = parts[0]!;
  let registry = DOCKER_HUB;
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = first === 'index.docker.io' || first === 'registry-1.docker.io' ? DOCKER_HUB : first;
    parts.shift();
  }
  if (parts.length === 0 || !parts.every((p) => PATH_COMPONENT.test(p))) return undefined;
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift('library');
  return { registry, path: parts.join('/'), ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** `prefix/path[:tag][@digest]`: the reference pulled from `prefix` (a registry host or a mirror's prefix). */
function referenceAt(prefix: string, ref: ImageReference): string {
  const tag = ref.tag ?? (ref.digest ? undefined : 'latest');
  return `${prefix}/${ref.path}${tag ? `:${tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`;
}

/** An image a task names as this engine holds it, for the run's record. */
export interface BaseImage {
  /** The name the task gave. */
  name: string;
  /** `pulled` now (from `pulled_from`), or `local`: the engine had it. */
  origin: 'pulled' | 'local';
  /** The reference the engine pulled (the mirror's, where one was used). */
  pulled_from?: string;
  /** The local image id. */
  id: string;
  /** `repository@sha256:…` for each registry that served it: the manifest digests (none for an image built here). */
  digests: string[];
}

export type Acquired = { kind: 'available'; image: BaseImage } | { kind: 'unavailable'; reason: string };

/**
 * The one-line problem of an image a task needs that could not be had, with what the user
 * can do (`alternatives`: what else this kind of task could name instead).
 */
export function unavailableImage(name: string, reason: string, alternatives: readonly string[] = []): string {
  const ways = ['name a reachable registry or mirror (--registry-mirror)', ...alternatives, 'or load the image first'];
  return `this Docker engine has no image ${name} and it could not be pulled (${reason}); ${ways.join(', ')}`;
}

/** Progress of a pull, as lines for a human (`pulling x: 3/7 layers, 120/340 MB`). */
export type PullProgress = (line: string) => void;

const pending = new Map<string, Promise<Acquired>>();
/** Registries (or mirrors) that did not answer, and why: asked once per process. */
const silent = new Map<string, string>();

async function inspect(docker: Docker, name: string): Promise<{ Id: string; RepoDigests?: string[] } | undefined> {
  return docker
    .getImage(name)
    .inspect()
    .catch(() => undefined);
}

/**
 * The image `name` on this engine: there already, pulled now (through its registry's mirror
 * where one is named), or why not. One pull per name per process.
 */
export function acquireImage(
  docker: Docker,
  name: string,
  settings: RegistrySettings,
  progress?: PullProgress,
  resolve: Resolve = systemResolve,
): Promise<Acquired> {
  const key = `${name}\0${settings.pull}\0${[...settings.mirrors].join(',')}`;
  let result = pending.get(key);
  if (!result) {
    result = acquire(docker, name, settings, resolve, progress);
    pending.set(key, result);
    // A local image may be removed later, and a failed pull may succeed later: only pulls in flight are shared.
    void result.finally(() => pending.delete(key));
  }
  return result;
}

/** Docker Hub's name as the engine dials it. */
const DOCKER_HUB_HOST = 'registry-1.docker.io';

/**
 * Why a registry a task names (not the user) must not be dialled: the engine pulls from the
 * host's own network, and treats loopback as an insecure registry, so a name such as
 * `127.0.0.1:6379/x` or one resolving to a private address would send it to a service on the
 * host or the lab's network. A name that does not resolve is left to the engine (it may pull
 * through a mirror of its own configuration).
 */
async function privateRegistry(registry: string, resolve: Resolve): Promise<string | undefined> {
  const host = (registry === 'docker.io' ? DOCKER_HUB_HOST : registry).replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  let addresses: string[];
  if (host === 'localhost') addresses = ['127.0.0.1'];
  else if (isIP(host)) addresses = [host];
  else addresses = await resolve(host).catch(() => []);
  const bad = addresses.map((a) => [a, forbiddenAddress(a)] as const).find(([, why]) => why !== undefined);
  if (!bad) return undefined;
  return `registry ${registry} is at a ${bad[1]} address (${bad[0]}): a task's image is pulled from such a registry only when you name it (--registry-mirror ${registry}=${registry})`;
}

async function acquire(
  docker: Docker,
  name: string,
  settings: RegistrySettings,
  resolve: Resolve,
  progress?: PullProgress,
): Promise<Acquired> {
  const local = await inspect(docker, name);
  if (local) return { kind: 'available', image: { name, origin: 'local', id: local.Id, digests: local.RepoDigests ?? [] } };
  if (settings.pull === 'never') return { kind: 'unavailable', reason: 'not on this engine, and --pull never' };
  const ref = parseReference(name);
  if (!ref) return { kind: 'unavailable', reason: `"${name}" is not an image reference a registry serves` };
  const mirror = settings.mirrors.get(ref.registry);
  const source = mirror ?? ref.registry;
  const known = silent.get(source);
  if (known) return { kind: 'unavailable', reason: known };
  if (!mirror) {
    const closed = await privateRegistry(ref.registry, resolve);
    if (closed) return { kind: 'unavailable', reason: closed };
  }
  const from = referenceAt(source, ref);
  try {
    await pull(docker, from, progress);
  } catch (error) {
    if (!isUnreachable(error)) return { kind: 'unavailable', reason: `pulling ${from} failed: ${oneLine(describeCause(error))}` };
    const reason = `${source} did not answer (${oneLine(describeCause(error))})`;
    silent.set(source, reason);
    return { kind: 'unavailable', reason };
  }
  const info = await docker.getImage(from).inspect();
  // The name the task wrote must find it (a mirror's image, a bare name pulled as `:latest`); a digest-only name is found by its digest.
  const tagged = parseTagged(name);
  if (tagged) await docker.getImage(info.Id).tag(tagged);
  return { kind: 'available', image: { name, origin: 'pulled', pulled_from: from, id: info.Id, digests: info.RepoDigests ?? [] } };
}

/** `{repo, tag}` for tagging an image with `name` (a digest-only name is found by its digest: nothing to tag). */
function parseTagged(name: string): { repo: string; tag: string } | undefined {
  if (name.includes('@')) return undefined;
  const { repository, tag } = splitTag(name);
  return { repo: repository, tag: tag ?? 'latest' };
}

/** Whether a pull failed because nothing answered (as opposed to an answer: unknown manifest, denied). */
function isUnreachable(error: unknown): boolean {
  const text = describeCause(error);
  return /no such host|connection refused|network is unreachable|i\/o timeout|no route to host|dial tcp|TLS handshake timeout|server gave HTTP response to HTTPS client|idle for/i.test(
    text,
  );
}

/** The engine's answer on one line, without dockerode's `(HTTP code 500) server error - ` in front. */
function oneLine(text: string): string {
  return text
    .replace(/^\(HTTP code \d+\)[^-]*- /, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

async function pull(docker: Docker, reference: string, progress?: PullProgress): Promise<void> {
  const stream = (await docker.pull(reference)) as Readable;
  const layers = new Map<string, { current: number; total: number; done: boolean }>();
  let lastReport = 0;
  await new Promise<void>((resolve, reject) => {
    let idle: NodeJS.Timeout;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        stream.destroy();
        reject(new Error(`the registry was idle for ${PULL_IDLE_MS / 1000} s`));
      }, PULL_IDLE_MS);
    };
    arm();
    docker.modem.followProgress(
      stream,
      (error: Error | null, events: Array<{ error?: string }>) => {
        clearTimeout(idle);
        const failed = error?.message ?? events.find((e) => e.error)?.error;
        if (failed) reject(new Error(failed));
        else resolve();
      },
      (event: { id?: string; status?: string; progressDetail?: { current?: number; total?: number } }) => {
        arm();
        if (!event.id || !event.status) return;
        const layer = layers.get(event.id) ?? { current: 0, total: 0, done: false };
        if (event.status === 'Downloading' && event.progressDetail?.total) {
          layer.current = event.progressDetail.current ?? 0;
          layer.total = event.progressDetail.total;
        }
        if (/^(Pull complete|Already exists|Download complete)$/.test(event.status)) layer.done = true;
        layers.set(event.id, layer);
        const now = Date.now();
        if (progress && now - lastReport > 1000) {
          lastReport = now;
          const all = [...layers.values()];
          const mb = (n: number) => (n / 1e6).toFixed(0);
          progress(
            `pulling ${reference}: ${all.filter((l) => l.done).length}/${all.length} layers, ${mb(all.reduce((a, l) => a + l.current, 0))}/${mb(all.reduce((a, l) => a + l.total, 0))} MB`,
          );
        }
      },
    );
  });
}

/** The images as this engine holds them now (null id: it has none of that name), for a run's record. */
export async function imageRecords(
  docker: Docker,
  names: readonly string[],
): Promise<Array<Omit<BaseImage, 'origin' | 'id'> & { id: string | null }>> {
  return Promise.all(
    names.map(async (name) => {
      const info = await inspect(docker, name);
      return { name, id: info?.Id ?? null, digests: info?.RepoDigests ?? [] };
    }),
  );
}
