/**
 * Where a task record's `repo_path` may point. It is the one field by which a task set
 * names a host directory, and what it names is copied into sandboxes, transcripts and
 * logs: `"repo_path": "../../../../root/private"` would hand any repository of the host
 * to the model and to whoever reads the run. So its real path (every link resolved) must
 * be inside the task set's directory — the directory given to `--tasks`, or the task
 * file's own directory when a file is given — or inside a directory the user trusts by
 * naming it in PROBE_REPO_ROOTS (a path list, as PATH: `dir1:dir2`). The same holds for
 * where the repository's `.git` leads (sandbox/task-git.ts).
 */
import { realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, resolve, sep } from 'node:path';
import { InputError, type InputLocation } from '../errors.ts';

/** The directories PROBE_REPO_ROOTS names, where a user keeps repositories that task sets may name. */
export function trustedRepoRoots(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.PROBE_REPO_ROOTS ?? '').split(delimiter).filter((p) => p.trim() !== '');
}

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}

export interface RepoConfinement {
  /** The task set's directory (default: the task file's directory). */
  taskSetDir?: string;
  /** Other directories a repo_path may resolve into (default: PROBE_REPO_ROOTS). */
  repoRoots?: string[];
}

/** A record's repository: its real path and the real directories it was allowed in (its `.git` may lead only inside them). */
export interface ConfinedRepo {
  dir: string;
  roots: string[];
}

/**
 * The real path of the repository a record names, relative to its file; an InputError
 * naming the file and field when it does not exist, is not a directory or lies outside
 * the directories allowed.
 */
export function confinedRepo(where: InputLocation & { file: string }, repoPath: string, options: RepoConfinement = {}): ConfinedRepo {
  const at = { ...where, field: 'repo_path' };
  const resolved = resolve(dirname(where.file), repoPath);
  const real = realPath(resolved);
  if (real === undefined) throw new InputError(at, `repository ${resolved} does not exist`);
  if (!statSync(real).isDirectory()) throw new InputError(at, `repository ${resolved} is not a directory`);
  const setDir = resolve(options.taskSetDir ?? dirname(where.file));
  const roots = [setDir, ...(options.repoRoots ?? trustedRepoRoots())].flatMap((r) => realPath(r) ?? []);
  if (!roots.some((root) => isInside(real, root)))
    throw new InputError(
      at,
      `${JSON.stringify(repoPath)} resolves to ${real}, outside the task set's directory ${realPath(setDir) ?? setDir}: a task set names only repositories inside it (name a directory you trust in PROBE_REPO_ROOTS to allow one elsewhere)`,
    );
  return { dir: real, roots };
}
