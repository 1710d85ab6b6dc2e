/**
 * Builds a task record from a task source directory — `repo/` (the repository at its
 * base commit: a git repository, or a plain tree), `tests-added/` (files the test patch
 * adds) and the SWE-bench fields (`meta.json`, and/or given by `probe task`'s flags) —
 * computing `base_commit` and `test_patch`. The directory is read
 * through util/safe-tree.ts: regular files and directories only, links only inside it,
 * size caps — a FIFO or a link to /dev/zero there is an error naming it, not a hang.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { isCommitOf } from '../sandbox/repo-checkout.ts';
import { commitTree } from '../sandbox/local.ts';
import { checkNestedGit, headCommit, taskGit, type GitConfinement, type TaskGit } from '../sandbox/task-git.ts';
import { copyTree, readTextFile, TEXT_FILE_BYTES, walkTree } from '../util/safe-tree.ts';

/** A `git apply`-able patch that adds each file (a patch is text: each file within the text cap). */
export function addFilesPatch(root: string): string {
  if (!existsSync(root)) return '';
  const what = 'the added tests';
  return walkTree(root, { what, limits: { fileBytes: TEXT_FILE_BYTES } })
    .flatMap((entry) => {
      if (entry.kind === 'dir') return [];
      if (entry.kind === 'link')
        throw new InputError({ file: entry.path }, 'is a symbolic link: a test patch adds files, give the file itself');
      return [entry];
    })
    .map(({ rel, path, executable }) => {
      const text = readTextFile(path, { root, what });
      const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
      const mode = executable ? '100755' : '100644';
      return `${[
        `diff --git a/${rel} b/${rel}`,
        `new file mode ${mode}`,
        '--- /dev/null',
        `+++ b/${rel}`,
        `@@ -0,0 +1,${lines.length} @@`,
        ...lines.map((l) => `+${l}`),
        ...(text.endsWith('\n') ? [] : ['\\ No newline at end of file']),
      ].join('\n')}\n`;
    })
    .join('');
}

/** Where a task source directory's repository and its git data may lie: inside the directory. */
function sourceConfinement(repoDir: string): GitConfinement {
  const taskDir = realpathSync(dirname(resolve(repoDir)));
  return { roots: [taskDir], at: { file: join(repoDir, '.git') }, rootsName: 'the task source directory' };
}

/** The commit a plain tree gets when committed deterministically (a nested `.git` must lead inside the task source directory). */
export function treeCommit(repoDir: string): string {
  checkNestedGit(repoDir, sourceConfinement(repoDir), "the task's repo/");
  const scratch = join(mkdtempSync(join(tmpdir(), 'probe-commit-')), 'repo');
  try {
    mkdirSync(scratch);
    copyTree(repoDir, scratch, { what: "the task's repo/" });
    return commitTree(scratch);
  } finally {
    rmSync(join(scratch, '..'), { recursive: true, force: true });
  }
}

/**
 * The commit a git repository's HEAD names, in full, read from its git data as text
 * (sandbox/task-git.ts: a `.git` leading out of the task source directory is refused), and
 * checked to be a commit of its object store by a git that reads none of the repository's settings.
 */
function gitHead(repoDir: string, repoGit: TaskGit, confinement: GitConfinement): string {
  const head = headCommit(repoGit, confinement);
  if (!isCommitOf(repoGit, head))
    throw new InputError(
      { file: repoDir },
      `is a git repository without a commit at HEAD (HEAD names ${head}, not a commit of its objects)`,
    );
  return head;
}

/** The base commit of a task's repository: HEAD of a git repository, else the plain tree's deterministic commit. */
export function baseCommitOf(repoDir: string): string {
  if (!existsSync(repoDir)) throw new InputError({ file: repoDir }, 'is missing: a task source directory holds the repository as repo/');
  const confinement = sourceConfinement(repoDir);
  const repoGit = taskGit(repoDir, confinement, { walk: true });
  return repoGit ? gitHead(repoDir, repoGit, confinement) : treeCommit(repoDir);
}

/** The fields of `meta.json`, when the directory has one. */
export function readMeta(taskDir: string): Record<string, unknown> {
  const metaFile = join(taskDir, 'meta.json');
  if (!existsSync(metaFile)) return {};
  const text = readTextFile(metaFile, { root: taskDir, what: 'the task source directory' });
  let meta: unknown;
  try {
    meta = JSON.parse(text);
  } catch (error) {
    throw new InputError({ file: metaFile }, `is not JSON: ${(error as Error).message}`);
  }
  if (!meta || typeof meta !== 'object' || Array.isArray(meta)) throw new InputError({ file: metaFile }, 'must hold one JSON object');
  return meta as Record<string, unknown>;
}

/** The record of a task source directory: `fields` over `meta.json`, base_commit and test_patch computed, repo_path `repo`. */
export function buildTaskRecord(taskDir: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...readMeta(taskDir),
    ...fields,
    base_commit: (fields.base_commit as string | undefined) ?? baseCommitOf(join(taskDir, 'repo')),
    test_patch: addFilesPatch(join(taskDir, 'tests-added')),
    repo_path: 'repo',
  };
}

/** Writes `task.json` into the task source directory and returns its path. */
export function writeTaskRecord(taskDir: string, fields: Record<string, unknown> = {}): string {
  const file = join(taskDir, 'task.json');
  writeFileSync(file, `${JSON.stringify(buildTaskRecord(taskDir, fields), null, 2)}\n`);
  return file;
}
