/**
 * The flags that say where task images and their builds' packages come from
 * (settings/image-sources.ts): registries and their mirrors, and the package indexes a
 * confined build may reach. Shared by every verb that builds or pulls a task's image.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_IMAGE_SOURCES, type ImageSources, PULL_POLICIES, type PullPolicy } from '../settings/image-sources.ts';

/** A registry host as image references name them: a DNS name or IPv4 address, an optional port; `docker.io` for Docker Hub. */
const REGISTRY_HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?))*(?::\d{1,5})?$/;
/** A reference prefix to pull through: a host (port optional) and optional path components. */
const MIRROR_PREFIX =
  /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?))*(?::\d{1,5})?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$/;

/** `HOST=MIRROR`, MIRROR a reference prefix or a URL (`http://127.0.0.1:5000`: the scheme is the engine's business). */
function registryMirror(value: string, previous: Map<string, string> | undefined): Map<string, string> {
  const m = /^([^=]+)=(.+)$/.exec(value);
  if (!m) throw new InvalidArgumentError('expected HOST=MIRROR, e.g. docker.io=mirror.lab:5000 or ghcr.io=http://127.0.0.1:5000');
  const host = m[1]!.trim().toLowerCase();
  const mirror = m[2]!
    .trim()
    .replace(/^https?:\/\//i, '')
    .replace(/\/+$/, '')
    .toLowerCase();
  if (!REGISTRY_HOST.test(host)) throw new InvalidArgumentError(`"${host}" is not a registry host (docker.io, ghcr.io, registry.lab:5000)`);
  if (!MIRROR_PREFIX.test(mirror))
    throw new InvalidArgumentError(`"${m[2]}" is not a registry to pull through (host[:port][/path], or an http(s):// URL of one)`);
  const map = new Map(previous ?? []);
  map.set(host === 'index.docker.io' || host === 'registry-1.docker.io' ? 'docker.io' : host, mirror);
  return map;
}

/** An http(s) URL without credentials in it (they would be written into the run's record). */
function indexUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http:// or https:// URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('expected an http:// or https:// URL');
  if (url.username || url.password)
    throw new InvalidArgumentError('credentials in the URL would be written into the run record; give the mirror without them');
  return url.href;
}

function indexUrls(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), indexUrl(value)];
}

/** `ARCHIVE=MIRROR`: two http:// URLs, the archive as apt sources name it and the mirror serving the same tree. */
function aptMirror(value: string, previous: Map<string, string> | undefined): Map<string, string> {
  const m = /^(https?:\/\/[^=]+)=(https?:\/\/.+)$/.exec(value);
  if (!m) throw new InvalidArgumentError('expected ARCHIVE=MIRROR, e.g. http://archive.ubuntu.com/ubuntu/=http://mirror.lab/ubuntu/');
  const [archive, mirror] = [indexUrl(m[1]!), indexUrl(m[2]!)].map((u) => (u.endsWith('/') ? u : `${u}/`));
  if (!archive!.startsWith('http:'))
    throw new InvalidArgumentError('the archive must be an http:// one (apt fetches https:// archives past the proxy, which refuses them)');
  const map = new Map(previous ?? []);
  map.set(archive!, mirror!);
  return map;
}

export function addImageSourceOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--pull <when>', 'pull an image a task names that this Docker engine lacks (missing), or never (offline)')
        .choices([...PULL_POLICIES])
        .default(DEFAULT_IMAGE_SOURCES.registry.pull),
    )
    .option(
      '--registry-mirror <HOST=MIRROR>',
      'pull images of registry HOST through MIRROR, e.g. docker.io=mirror.lab:5000 (repeatable)',
      registryMirror,
    )
    .option('--pip-index-url <url>', `pip's index for image builds, in place of PyPI`, indexUrl)
    .option('--pip-extra-index-url <url>', 'a further index pip reads in image builds (repeatable)', indexUrls)
    .option('--npm-registry <url>', `npm's registry for image builds, in place of ${DEFAULT_IMAGE_SOURCES.egress.npmRegistry}`, indexUrl)
    .option('--apt-mirror <ARCHIVE=MIRROR>', 'serve what image builds ask of an apt archive from a mirror (repeatable)', aptMirror)
    .option(
      '--no-public-indexes',
      "image builds reach only the mirrors named here and the base image's Debian archive, not PyPI, npm or the distributions' archives",
    );
}

export interface ImageSourceFlags {
  pull: PullPolicy;
  registryMirror?: Map<string, string>;
  pipIndexUrl?: string;
  pipExtraIndexUrl?: string[];
  npmRegistry?: string;
  aptMirror?: Map<string, string>;
  publicIndexes: boolean;
}

export function imageSources(flags: ImageSourceFlags): ImageSources {
  const egress = DEFAULT_IMAGE_SOURCES.egress;
  return {
    registry: { pull: flags.pull, mirrors: flags.registryMirror ?? new Map() },
    egress: {
      pipIndexUrl: flags.pipIndexUrl ?? egress.pipIndexUrl,
      pipExtraIndexUrls: flags.pipExtraIndexUrl ?? [],
      npmRegistry: flags.npmRegistry ?? egress.npmRegistry,
      aptMirrors: flags.aptMirror ?? new Map(),
      publicIndexes: flags.publicIndexes,
    },
  };
}
