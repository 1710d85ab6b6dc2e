/**
 * The base tree of a task whose repo_path is a git repository, built from the task's
 * object store alone (task-git.ts says which stores, checked) into a repository of
 * probe's own, without running git in the task's repository (no config of the task set's
 * is read) and without writing more than the tree caps allow:
 *
 * 1. the base commit's tree is measured from its objects (`git ls-tree -r`) before a byte
 *    is written: a git bomb (one tree referencing another, and so on) of a few hundred
 *    kilobytes checks out gigabytes, so the tree must hold within safe-tree's TREE_LIMITS,
 *    as a plain tree does (1 GiB a file, 4 GiB in all, 200,000 entries);
 * 2. only the base commit's history is packed into the new repository: no other branch,
 *    tag or later commit of the task's repository reaches the sandbox;
 * 3. each file is checked out as committed (attributes that convert end of lines, expand
 *    `$Id$`, run filters or change the encoding are switched off), so the checkout is the
 *    size measured.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError, type InputLocation } from '../errors.ts';
import type { LoadedTask } from '../schema/task.ts';
import { TREE_LIMITS } from '../util/safe-tree.ts';
import { hostGit, runHostGit } from './host-git.ts';
import type { TaskGit } from './task-git.ts';

const MiB = 2 ** 20;
const GiB = 2 ** 30;

function bytes(n: number): string {
  return n >= GiB ? `${(n / GiB).toFixed(2)} GiB` : n >= MiB ? `${(n / MiB).toFixed(1)} MiB` : `${n} bytes`;
}

/** The longest line of the listing below: "commit " (a submodule), a SHA-256 id and a newline. */
const LISTING_LINE_BYTES = 'commit '.length + 64 + 1;

/** What the base commit checks out: entries (trees, files, links, submodules) and the bytes of the largest file and of all. */
interface TreeMeasure {
  entries: number;
  largest: number;
  total: number;
}

/**
 * The base tree measured from its objects. The listing names each entry's object without
 * reading it, and stops when it would exceed the longest possible listing of
 * TREE_LIMITS.entries (a bomb's billion entries are never listed: `entries` undefined
 * means "more than the cap"); then each distinct blob's size is asked once (a bomb names
 * one blob thousands of times).
 */
function measureTree(commit: string, env: Record<string, string>, at: InputLocation): TreeMeasure | { entries: undefined } {
  const listing = runHostGit(['ls-tree', '-r', '-t', '--format=%(objecttype) %(objectname)', commit], {
    env,
    maxBuffer: LISTING_LINE_BYTES * (TREE_LIMITS.entries + 1),
  });
  if ((listing.error as NodeJS.ErrnoException | undefined)?.code === 'ENOBUFS') return { entries: undefined };
  if (listing.status !== 0)
    throw new InputError(at, `cannot list the tree of base commit ${commit}: ${(listing.stderr ?? String(listing.error)).trim()}`);
  const lines = listing.stdout.split('\n').filter((line) => line !== '');
  // Files and links are blobs; trees and submodules write nothing of their own.
  const blobs = new Map<string, number>();
  for (const line of lines) if (line.startsWith('blob ')) blobs.set(line.slice(5), (blobs.get(line.slice(5)) ?? 0) + 1);
  const sizes = runHostGit(['cat-file', '--batch-check=%(objectname) %(objectsize)'], {
    env,
    input: [...blobs.keys()].map((id) => `${id}\n`).join(''),
  });
  if (sizes.status !== 0)
    throw new InputError(at, `cannot read the sizes of base commit ${commit}'s files: ${(sizes.stderr ?? String(sizes.error)).trim()}`);
  let largest = 0;
  let total = 0;
  for (const line of sizes.stdout.split('\n').filter((l) => l !== '')) {
    const [id, size] = line.split(' ');
    if (size === 'missing' || !blobs.has(id!))
      throw new InputError(at, `base commit ${commit} names an object the repository lacks (${line})`);
    largest = Math.max(largest, Number(size));
    total += Number(size) * blobs.get(id!)!;
  }
  return { entries: lines.length, largest, total };
}

/** An InputError when the base tree breaks a cap (naming the task and the size), else nothing. */
function checkTreeSize(task: LoadedTask, env: Record<string, string>): void {
  const at = { file: task.file, field: 'repo_path' };
  const measure = measureTree(task.base_commit, env, at);
  const commit = `task ${task.instance_id}: base commit ${task.base_commit.slice(0, 12)}`;
  const refused = "refused before anything was written (the caps on a task's repository, as on a plain tree)";
  if (measure.entries === undefined || measure.entries > TREE_LIMITS.entries)
    throw new InputError(at, `${commit} holds more than ${TREE_LIMITS.entries} files, directories and links: ${refused}`);
  if (measure.largest > TREE_LIMITS.fileBytes)
    throw new InputError(
      at,
      `${commit} holds a file of ${bytes(measure.largest)}, over the ${bytes(TREE_LIMITS.fileBytes)} cap on one file: ${refused}`,
    );
  if (measure.total > TREE_LIMITS.totalBytes)
    throw new InputError(
      at,
      `${commit} checks out ${bytes(measure.total)}, over the ${bytes(TREE_LIMITS.totalBytes)} cap on a tree: ${refused}`,
    );
}

/** git's object format for a commit id: a 64-digit id is a SHA-256 repository's. */
function objectFormat(commit: string): 'sha1' | 'sha256' {
  return commit.length === 64 ? 'sha256' : 'sha1';
}

/** The variables that make a repository of probe's (`gitDir`) read the task's objects: its own config and refs, their store. */
function borrowing(git: TaskGit, gitDir: string): Record<string, string> {
  return { GIT_DIR: gitDir, GIT_OBJECT_DIRECTORY: git.objectDirs[0] ?? join(git.commonDir, 'objects') };
}

/**
 * Whether `commit` is a commit of the task's object store, asked through a scratch
 * repository of probe's (so no setting of the task's repository is read).
 */
export function isCommitOf(git: TaskGit, commit: string): boolean {
  const scratch = mkdtempSync(join(tmpdir(), 'probe-objects-'));
  try {
    hostGit(['init', '-q', '--bare', '--template=', `--object-format=${objectFormat(commit)}`, scratch]);
    const type = runHostGit(['cat-file', '-t', commit], { env: borrowing(git, scratch) });
    return type.status === 0 && type.stdout.trim() === 'commit';
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Every attribute that makes a checked-out file differ from its blob, switched off (`info/attributes` outranks the tree's). */
const AS_COMMITTED = '* -text -eol -crlf -ident -filter -working-tree-encoding\n';

/** A new repository at `dir` (a path that does not exist yet) holding the base commit's history, its tree checked out on branch `main`. */
export function checkoutGitBase(task: LoadedTask, git: TaskGit, dir: string): void {
  if (!isCommitOf(git, task.base_commit))
    throw new InputError(
      { file: task.file, field: 'base_commit' },
      `${task.base_commit} is not a commit of the repository at ${task.repoDir} (${git.dotGit})`,
    );
  // The new repository must read the task's objects: the same object format.
  hostGit(['init', '-q', '--template=', `--object-format=${objectFormat(task.base_commit)}`, '-b', 'main', dir]);
  const gitDir = join(dir, '.git');
  mkdirSync(join(gitDir, 'info'), { recursive: true });
  if (git.shallow) writeFileSync(join(gitDir, 'shallow'), git.shallow);
  const borrowed = borrowing(git, gitDir);
  checkTreeSize(task, borrowed);
  // No delta search (--window=0): a blob is never inflated beside others to compare them.
  hostGit(['pack-objects', '--revs', '--window=0', '-q', join(gitDir, 'objects', 'pack', 'pack')], {
    env: borrowed,
    input: `${task.base_commit}\n`,
  });
  writeFileSync(join(gitDir, 'info', 'attributes'), AS_COMMITTED);
  hostGit(['update-ref', 'refs/heads/main', task.base_commit], { cwd: dir });
  hostGit(['reset', '-q', '--hard'], { cwd: dir });
}
