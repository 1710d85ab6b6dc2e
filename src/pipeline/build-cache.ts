/**
 * A probe set built before, kept in the result cache: a warm `probe demo` reads it instead of
 * replaying every trajectory in the jail again (the build is most of a warm demo). It is the
 * same set only if everything that decides a build is the same, so the key hashes all of it:
 * the trajectories and the task directory byte for byte, the build settings, probe's own
 * source and locked dependencies (a changed replay or verifier builds other items), and the
 * Python the jail runs the tests with. A cached set that does not read back is built again.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../embedded.ts';
import { loadProbeItems } from '../probes/load.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { hashTree, MAX_STRING_BYTES, readTextFile } from '../util/safe-tree.ts';
import { trajectoriesHash } from './build.ts';

const CACHE_VERSION = 'probe-build-cache 1';

/** The Python the jail's tests run with (its version decides verdicts as much as the code does). */
function pythonVersion(): string {
  const run = spawnSync('python3', ['--version'], { encoding: 'utf8' });
  return run.status === 0 ? `${run.stdout}${run.stderr}`.trim() : 'none';
}

/** The key of a build: trajectories, tasks, settings, probe's code and the jail's Python. */
export function buildCacheKey(b: { trajectories: string; tasksDir: string; settings: Record<string, unknown> }): string {
  const hash = createHash('sha256');
  for (const part of [
    CACHE_VERSION,
    trajectoriesHash(b.trajectories),
    hashTree(b.tasksDir),
    JSON.stringify(b.settings),
    hashTree(join(REPO_ROOT, 'src')),
    readFileSync(join(REPO_ROOT, 'package-lock.json')),
    pythonVersion(),
  ])
    hash.update(part).update('\0');
  return hash.digest('hex');
}

const cachedFile = (cacheDir: string, key: string) => join(cacheDir, 'builds', `${key}.jsonl`);

/** Copies the cached set of `key` to `dest`; false where there is none (or it does not read back as probe items). */
export function readCachedBuild(cacheDir: string, key: string, dest: string): boolean {
  const file = cachedFile(cacheDir, key);
  if (!existsSync(file)) return false;
  try {
    if (loadProbeItems(file).length === 0) return false;
  } catch {
    return false; // a damaged entry: the build runs and replaces it
  }
  // Read back through safe-tree: the entry checked above is what is copied, never a FIFO swapped in after.
  writeFileAtomic(dest, readTextFile(file, { root: cacheDir, maxBytes: MAX_STRING_BYTES, what: 'the cache' }));
  return true;
}

/** Keeps the set just built in `built` under `key`. */
export function writeCachedBuild(cacheDir: string, key: string, built: string): void {
  const file = cachedFile(cacheDir, key);
  mkdirSync(join(cacheDir, 'builds'), { recursive: true });
  writeFileAtomic(file, readTextFile(built, { maxBytes: MAX_STRING_BYTES, what: 'the probe set built' }));
}
