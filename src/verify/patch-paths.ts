/**
 * The paths a git patch names (old and new sides, renames and copies included), as exact
 * bytes: git writes a path with unusual bytes C-quoted (`"a/we\nird\377.py"`). Used for
 * the task's own test patch, which is trusted; what a candidate changed is read from git
 * inside the sandbox instead (graded-tree.ts).
 */

/** A path as its exact bytes (latin1: one char per byte) and as UTF-8 text for names and reports. */
export interface RepoPath {
  key: string;
  text: string;
}

export function repoPathFromBytes(bytes: Buffer): RepoPath {
  return { key: bytes.toString('latin1'), text: bytes.toString('utf8') };
}

export function repoPathFromText(text: string): RepoPath {
  return repoPathFromBytes(Buffer.from(text, 'utf8'));
}

const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/** Undoes git's C-style quoting of a path (`quote_c_style`); the text is returned as bytes. */
function unquote(quoted: string): Buffer {
  const bytes: number[] = [];
  for (let i = 1; i < quoted.length - 1; i++) {
    const c = quoted[i]!;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = quoted[++i]!;
    if (/[0-7]/.test(next)) {
      bytes.push(Number.parseInt(quoted.slice(i, i + 3), 8));
      i += 2;
    } else {
      bytes.push(C_ESCAPES[next] ?? next.charCodeAt(0));
    }
  }
  return Buffer.from(bytes);
}

/** A path as a patch line writes it, without its `a/`/`b/` prefix when it has one. */
function pathOf(field: string, prefixed: boolean): Buffer | null {
  const raw = field.replace(/\t$/, '');
  if (raw === '/dev/null') return null;
  const bytes = raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? unquote(raw) : Buffer.from(raw, 'utf8');
  if (!prefixed) return bytes;
  return bytes
    .subarray(0, 2)
    .toString('latin1')
    .match(/^[ab]\/$/)
    ? bytes.subarray(2)
    : bytes;
}

/** `diff --git a/P b/P` for a patch without ---/+++ lines (binary, mode-only): both sides are the same path. */
function headerPaths(rest: string): Buffer[] {
  if (rest.startsWith('"')) {
    const end = /^"(?:[^"\\]|\\.)*"/.exec(rest)?.[0];
    if (!end) return [];
    const second = rest.slice(end.length + 1);
    return [pathOf(end, true), pathOf(second, true)].filter((p): p is Buffer => p !== null);
  }
  if ((rest.length - 1) % 2 === 0) {
    const half = (rest.length - 1) / 2;
    const [a, b] = [rest.slice(0, half), rest.slice(half + 1)];
    if (a.slice(2) === b.slice(2)) return [pathOf(a, true)!];
  }
  return [];
}

export function patchPaths(patch: string): RepoPath[] {
  const found = new Map<string, RepoPath>();
  const add = (bytes: Buffer | null) => {
    if (bytes === null || bytes.length === 0) return;
    const path = repoPathFromBytes(bytes);
    found.set(path.key, path);
  };
  let inHunk = false; // hunk lines can start with "--- " too
  for (const line of patch.split('\n')) {
    let m: RegExpExecArray | null;
    if ((m = /^diff --git (.*)$/.exec(line))) {
      inHunk = false;
      headerPaths(m[1]!).forEach(add);
    } else if (line.startsWith('@@')) inHunk = true;
    else if (inHunk) continue;
    else if ((m = /^(?:---|\+\+\+) (.*)$/.exec(line))) add(pathOf(m[1]!, true));
    else if ((m = /^(?:rename|copy) (?:from|to) (.*)$/.exec(line))) add(pathOf(m[1]!, false));
  }
  return [...found.values()];
}
