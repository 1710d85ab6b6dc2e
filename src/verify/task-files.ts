/**
 * Builds a task record from a task source directory — `repo/` (the repository at its
 * base commit, a plain tree), `tests-added/` (files the test patch adds) and `meta.json`
 * (the SWE-bench fields) — computing `base_commit` and `test_patch`. The directory is read
 * through util/safe-tree.ts: regular files and directories only, links only inside it,
 * size caps — a FIFO or a link to /dev/zero there is an error naming it, not a hang.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../errors.ts';
import { commitTree } from '../sandbox/local.ts';
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

/** The commit a plain tree gets when committed deterministically. */
export function treeCommit(repoDir: string): string {
  const scratch = join(mkdtempSync(join(tmpdir(), 'probe-commit-')), 'repo');
  try {
    mkdirSync(scratch);
    copyTree(repoDir, scratch, { what: "the task's repo/" });
    return commitTree(scratch);
  } finally {
    rmSync(join(scratch, '..'), { recursive: true, force: true });
  }
}

export function buildTaskRecord(taskDir: string): Record<string, unknown> {
  const metaFile = join(taskDir, 'meta.json');
  const meta = JSON.parse(readTextFile(metaFile, { root: taskDir, what: 'the task source directory' })) as Record<string, unknown>;
  return {
    ...meta,
    base_commit: treeCommit(join(taskDir, 'repo')),
    test_patch: addFilesPatch(join(taskDir, 'tests-added')),
    repo_path: 'repo',
  };
}

export function writeTaskRecord(taskDir: string): void {
  writeFileSync(join(taskDir, 'task.json'), `${JSON.stringify(buildTaskRecord(taskDir), null, 2)}\n`);
}
