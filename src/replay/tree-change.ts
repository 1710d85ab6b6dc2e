/**
 * Which files an action changed, from the working tree's cumulative patch (against the base
 * commit) before and after it: a file changed when its section of the patch differs. This
 * is what the tree says, whatever the command looked like.
 */

/** The patch's per-file sections, keyed by path (the `b/` side; a deletion keys its `a/` side). */
function sections(patch: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = patch.split(/^(?=diff --git )/m).filter((p) => p.startsWith('diff --git '));
  for (const part of parts) {
    const header = /^diff --git a\/(.+?) b\/(.+)$/m.exec(part);
    if (!header) continue;
    const deleted = /^\+\+\+ \/dev\/null$/m.test(part);
    out.set(deleted ? header[1]! : header[2]!, part);
  }
  return out;
}

/** Paths whose state differs between two cumulative patches of the same tree, sorted. */
export function changedFiles(before: string, after: string): string[] {
  const a = sections(before);
  const b = sections(after);
  const paths = new Set([...a.keys(), ...b.keys()]);
  return [...paths].filter((p) => a.get(p) !== b.get(p)).sort();
}
