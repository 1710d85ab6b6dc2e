/**
 * A task's `environment` (docs/trajectories.md, "Environments"): what its tests need beyond the base
 * image — Debian packages, and pip requirements that Debian packages (`numpy` →
 * `python3-numpy`). Everything becomes one list of Debian packages: the Docker sandbox
 * installs them in an image of its own, the local sandbox checks the host has them.
 *
 * No versions: an image gets the version its Debian release carries, and so does the host,
 * so a pin could only be honoured by luck. A pinned entry is refused at load, saying so.
 */
import { z } from 'zod';

/** Debian policy's package names (no `pkg=version`, no `:arch`). */
const DEBIAN_NAME = /^[a-z0-9][a-z0-9+.-]+$/;
/** PEP 508 distribution names. */
const PIP_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;
/** A name followed by a version clause (`numpy==1.24`, `numpy >=1`, `numpy~=1.2`). */
const PIP_PINNED = /^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:===|==|>=|<=|~=|!=|<|>)/;

const DebianPackage = z.string().superRefine((name, ctx) => {
  if (DEBIAN_NAME.test(name)) return;
  const pinned = /^([a-z0-9][a-z0-9+.-]+)\s*=/.exec(name);
  ctx.addIssue({
    code: 'custom',
    message: pinned
      ? `"${name}" pins a version, which cannot be honoured: the image (or host) has the version its Debian release carries; name the package alone ("${pinned[1]}")`
      : `"${name}" is not a Debian package name (lower-case letters, digits, "+", "-", ".")`,
  });
});

const PipRequirement = z.string().superRefine((requirement, ctx) => {
  if (PIP_NAME.test(requirement)) return;
  const pinned = PIP_PINNED.exec(requirement);
  ctx.addIssue({
    code: 'custom',
    message: pinned
      ? `"${requirement}" pins a version: a pip requirement is installed as its Debian package, at the version the Debian release of the image (or host) carries, so a version pin cannot be honoured; name it alone ("${pinned[1]}"), or name a Debian package under environment.debian`
      : `"${requirement}" is not a bare pip package name (extras, markers and URLs cannot be installed as Debian packages)`,
  });
});

export const TaskEnvironment = z.strictObject({
  /** Debian package names, installed with apt-get. */
  debian: z.array(DebianPackage).default([]),
  /** pip distribution names, each installed as its Debian package (pipDebianPackage). */
  pip: z.array(PipRequirement).default([]),
});
export type TaskEnvironment = z.infer<typeof TaskEnvironment>;

/**
 * Debian names python modules, not distributions (policy 4.2: `python3-<module>`): where
 * the two differ for a widely used distribution, the package Debian actually ships.
 */
const DEBIAN_NAME_OF: Record<string, string> = {
  beautifulsoup4: 'python3-bs4',
  attrs: 'python3-attr',
  'opencv-python': 'python3-opencv',
  pillow: 'python3-pil',
  pyjwt: 'python3-jwt',
  'python-dateutil': 'python3-dateutil',
  pyyaml: 'python3-yaml',
  'scikit-learn': 'python3-sklearn',
};

/** The Debian package of a pip requirement: `python3-` + its normalized name (PEP 503), or Debian's own name for it. */
export function pipDebianPackage(requirement: string): string {
  const normalized = requirement.toLowerCase().replace(/[-_.]+/g, '-');
  return DEBIAN_NAME_OF[normalized] ?? `python3-${normalized}`;
}

/**
 * Every Debian package an environment names, sorted and once each, with where it came from
 * (for messages: `python3-numpy` ← `pip "numpy"`).
 */
export function environmentPackages(environment: TaskEnvironment | undefined): Map<string, string> {
  const origins = new Map<string, string>();
  for (const name of environment?.debian ?? []) origins.set(name, 'debian');
  for (const requirement of environment?.pip ?? []) {
    const name = pipDebianPackage(requirement);
    if (!origins.has(name)) origins.set(name, `pip "${requirement}"`);
  }
  return new Map([...origins].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `python3-numpy (pip "numpy")`, or the bare name for a package the task names itself. */
export function describePackage(name: string, origins: Map<string, string>): string {
  const origin = origins.get(name);
  return origin && origin !== 'debian' ? `${name} (${origin})` : name;
}
