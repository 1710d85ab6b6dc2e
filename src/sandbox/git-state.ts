/**
 * Working-tree state through git, run inside any sandbox as its user: the cumulative patch
 * against the base commit (untracked files included, the real index untouched) and
 * applying a state's patch. Patches travel through the command's stdin and stdout, never
 * through a file the sandbox could have replaced with a link.
 */
import { ProbeError } from '../errors.ts';
import { FILE_OUTPUT_CAP, type Sandbox } from './types.ts';

/** Files that running code leaves behind and that never count as an edit. */
export const IGNORED_ARTIFACTS = ['__pycache__/', '*.pyc', '.pytest_cache/', 'node_modules/.cache/'];

/** Shell command that marks run artifacts as ignored for this clone only (.git/info/exclude). */
export const EXCLUDE_ARTIFACTS = `printf '%s\\n' ${IGNORED_ARTIFACTS.map((p) => `'${p}'`).join(' ')} >> .git/info/exclude`;

export async function treeDiff(sb: Sandbox, baseCommit: string): Promise<string> {
  // A scratch index of its own (mktemp: nothing the sandbox planted is reused), the real one untouched.
  const result = await sb.exec(
    `idx="$(mktemp -u /tmp/.probe-diff-index.XXXXXXXX)" && GIT_INDEX_FILE="$idx" git add -A . 2>/dev/null && GIT_INDEX_FILE="$idx" git -c core.quotepath=off diff --cached --binary ${baseCommit} 2>/dev/null; status=$?; rm -f "$idx"; exit $status`,
    { timeoutMs: 120_000, outputCap: FILE_OUTPUT_CAP },
  );
  if (result.exitCode !== 0) throw new ProbeError(`git diff failed in the ${sb.provider} sandbox (exit ${result.exitCode})`);
  if (result.truncated) throw new ProbeError(`the cumulative patch is larger than ${FILE_OUTPUT_CAP / 2 ** 20} MiB`);
  return result.output;
}

/** Applies a state's patch to a tree just reset to its base commit. */
export async function applyStatePatch(sb: Sandbox, patch: string): Promise<void> {
  if (patch.trim() === '') return;
  const apply = await sb.exec('git apply --binary --whitespace=nowarn -', { timeoutMs: 120_000, stdin: patch });
  if (apply.exitCode !== 0) throw new ProbeError(`cannot apply the state patch: ${apply.output.slice(0, 500)}`);
}
