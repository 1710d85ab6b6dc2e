/**
 * Where a task's images and its build's packages come from (issue 38): the settings a user
 * gives once per run (`--pull`, `--registry-mirror`, `--pip-index-url`, …, parsed in
 * cli/image-source-options.ts) and every image and build reads.
 *
 * - Registries: an image a task names (a Dockerfile's FROM, task.toml's docker_image, a
 *   SWE-bench row's image) that this engine lacks is pulled by the engine, through a mirror
 *   where one is named for its registry (registry.ts). Where no registry answers, a
 *   Dockerfile's FROM falls back to the Debian stand-in, with the notice.
 * - Build egress: what a confined build may fetch through probe's proxy
 *   (build-network.ts): the distributions' archives, PyPI and npm by default, or the
 *   user's mirrors in their place. Never the host, loopback or a raw socket, unless the
 *   user names a mirror there.
 */

/** When an image this engine lacks is pulled: `missing` (pull it), `never` (offline: only images the engine has). */
export const PULL_POLICIES = ['missing', 'never'] as const;
export type PullPolicy = (typeof PULL_POLICIES)[number];

export interface RegistrySettings {
  pull: PullPolicy;
  /**
   * Registry host (as an image reference names it: `docker.io`, `ghcr.io`, `registry.lab:5000`) →
   * the mirror's reference prefix (`127.0.0.1:5000`, `mirror.lab/ghcr`): `ghcr.io/a/b:t` is pulled as
   * `127.0.0.1:5000/a/b:t` and tagged with its own name.
   */
  mirrors: ReadonlyMap<string, string>;
}

export interface BuildEgress {
  /** pip's index for builds (PIP_INDEX_URL); PyPI unless the user names a mirror. */
  pipIndexUrl: string;
  /** Further indexes pip reads (PIP_EXTRA_INDEX_URL). */
  pipExtraIndexUrls: readonly string[];
  /** npm's registry for builds (npm_config_registry). */
  npmRegistry: string;
  /**
   * Archives a distribution's apt sources name → the mirror that serves them instead
   * (`http://archive.ubuntu.com/ubuntu/` → `http://mirror.lab/ubuntu/`): the proxy fetches
   * from the mirror what a build asks of the archive.
   */
  aptMirrors: ReadonlyMap<string, string>;
  /**
   * Whether the public package hosts (Debian's and Ubuntu's archives, PyPI and its file host,
   * npm's registry) are allowed beside what the user names. `--no-public-indexes` leaves only
   * the user's mirrors (and the base image's archive, which probe's own layers install from).
   */
  publicIndexes: boolean;
}

export interface ImageSources {
  registry: RegistrySettings;
  egress: BuildEgress;
}

export const PYPI_INDEX_URL = 'https://pypi.org/simple';
export const NPM_REGISTRY_URL = 'https://registry.npmjs.org/';

export const DEFAULT_IMAGE_SOURCES: ImageSources = {
  registry: { pull: 'missing', mirrors: new Map() },
  egress: {
    pipIndexUrl: PYPI_INDEX_URL,
    pipExtraIndexUrls: [],
    npmRegistry: NPM_REGISTRY_URL,
    aptMirrors: new Map(),
    publicIndexes: true,
  },
};

/** Sources that pull nothing and reach only the Debian archive of the base image: probe before issue 38. */
export const OFFLINE_IMAGE_SOURCES: ImageSources = {
  registry: { pull: 'never', mirrors: new Map() },
  egress: { ...DEFAULT_IMAGE_SOURCES.egress, publicIndexes: false },
};

/** What the run record says of the sources (JSON: maps as objects). */
export function describeImageSources(sources: ImageSources): Record<string, unknown> {
  return {
    pull: sources.registry.pull,
    registry_mirrors: Object.fromEntries(sources.registry.mirrors),
    pip_index_url: sources.egress.pipIndexUrl,
    pip_extra_index_urls: [...sources.egress.pipExtraIndexUrls],
    npm_registry: sources.egress.npmRegistry,
    apt_mirrors: Object.fromEntries(sources.egress.aptMirrors),
    public_indexes: sources.egress.publicIndexes,
  };
}
