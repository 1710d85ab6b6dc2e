/**
 * Builds a task record from a task source directory — `repo/` (the repository at its
 * base commit, a plain tree), `tests-added/` (files the test patch adds) and `meta.json`
 * (the SWE-bench fields) — computing `base_commit` and `test_patch`.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { commitTree } from '../sandbox/local.ts';

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
}

/** A `git apply`-able patch that adds each file. */
export function addFilesPatch(root: string): string {
  return filesUnder(root)
    .map((file) => {
      const rel = relative(root, file);
      const text = readFileSync(file, 'utf8');
      const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
      const mode = statSync(file).mode & 0o111 ? '100755' : '100644';
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
    cpSync(repoDir, scratch, { recursive: true });
    return commitTree(scratch);
  } finally {
    rmSync(join(scratch, '..'), { recursive: true, force: true });
  }
}

export function buildTaskRecord(taskDir: string): Record<string, unknown> {
  const meta = JSON.parse(readFileSync(join(taskDir, 'meta.json'), 'utf8')) as Record<string, unknown>;
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
