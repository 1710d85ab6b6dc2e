/**
 * Reading a git patch (as `treeDiff` writes it): which files it touches, how, and which
 * lines it adds and removes. Enough for behaviour metrics and the prefix-leak check.
 */

export interface FileChange {
  path: string;
  status: 'added' | 'deleted' | 'modified';
  binary: boolean;
  added: string[];
  removed: string[];
}

export function patchFiles(patch: string): FileChange[] {
  const files: FileChange[] = [];
  let current: FileChange | undefined;
  let inHunk = false;
  for (const line of patch.split('\n')) {
    const header = /^diff --git a\/(.*) b\/(.*)$/.exec(line);
    if (header) {
      current = { path: header[2]!, status: 'modified', binary: false, added: [], removed: [] };
      files.push(current);
      inHunk = false;
      continue;
    }
    if (!current) continue;
    if (!inHunk) {
      if (line.startsWith('new file mode')) current.status = 'added';
      else if (line.startsWith('deleted file mode')) current.status = 'deleted';
      else if (line.startsWith('GIT binary patch') || line.startsWith('Binary files')) current.binary = true;
    }
    if (line.startsWith('@@')) {
      inHunk = true;
      continue;
    }
    if (!inHunk) continue;
    if (line.startsWith('+')) current.added.push(line.slice(1));
    else if (line.startsWith('-')) current.removed.push(line.slice(1));
  }
  return files;
}

/**
 * Test files by the usual conventions (pytest, unittest, node --test, jest, go): a `test`/
 * `tests`/`__tests__`/`spec` directory, `test_*.py`, `*_test.py`, `conftest.py`,
 * `*.test.js`, `*.spec.ts` and the like.
 */
export function isTestPath(path: string): boolean {
  return (
    /(^|\/)(tests?|__tests__|spec|specs)\//.test(path) ||
    /(^|\/)(test_[^/]*\.py|[^/]*_test\.(py|go)|conftest\.py)$/.test(path) ||
    /\.(test|spec)\.[cm]?[jt]sx?$/.test(path)
  );
}

/**
 * Source files: files of the repository at the base commit (not created during the
 * episode) that are not tests. A new `reproduce.py` is not a source edit; changing
 * `cart/pricing.py` is.
 */
export function sourceChanges(patch: string): FileChange[] {
  return patchFiles(patch).filter((f) => f.status !== 'added' && !isTestPath(f.path));
}
