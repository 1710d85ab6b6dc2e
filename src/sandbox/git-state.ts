/**
 * Working-tree state through git, run inside any sandbox: the cumulative patch against the
 * base commit (untracked files included, the real index untouched) and restoring a state.
 */
import { ProbeError } from '../errors.ts';
import type { EnvState } from '../schema/task.ts';
import type { Sandbox } from './types.ts';

/** Files that running code leaves behind and that never count as an edit. */
export const IGNORED_ARTIFACTS = ['__pycache__/', '*.pyc', '.pytest_cache/', 'node_modules/.cache/'];

const SCRATCH_INDEX = '/tmp/.probe-diff-index';

/** Shell command that marks run artifacts as ignored for this clone only (.git/info/exclude). */
export const EXCLUDE_ARTIFACTS = `printf '%s\\n' ${IGNORED_ARTIFACTS.map((p) => `'${p}'`).join(' ')} >> .git/info/exclude`;

export async function treeDiff(sb: Sandbox, baseCommit: string): Promise<string> {
  const result = await sb.exec(
    `rm -f ${SCRATCH_INDEX} && GIT_INDEX_FILE=${SCRATCH_INDEX} git add -A . 2>/dev/null && GIT_INDEX_FILE=${SCRATCH_INDEX} git -c core.quotepath=off diff --cached --binary ${baseCommit} 2>/dev/null; status=$?; rm -f ${SCRATCH_INDEX}; exit $status`,
    { timeoutMs: 60_000 },
  );
  if (result.exitCode !== 0) throw new ProbeError(`git diff failed in the ${sb.provider} sandbox (exit ${result.exitCode})`);
  if (result.truncated) throw new ProbeError(`the cumulative patch is larger than the ${sb.provider} sandbox's output cap`);
  return result.output;
}

export async function restoreState(sb: Sandbox, state: EnvState): Promise<void> {
  const reset = await sb.exec(`git reset -q --hard ${state.base_commit} && git clean -q -fdx`, { timeoutMs: 60_000 });
  if (reset.exitCode !== 0) throw new ProbeError(`cannot reset to ${state.base_commit}: ${reset.output.slice(0, 500)}`);
  if (state.patch.trim() === '') return;
  await sb.writeFile('/tmp/.probe-state.patch', state.patch);
  const apply = await sb.exec('git apply --binary --whitespace=nowarn /tmp/.probe-state.patch', { timeoutMs: 60_000 });
  if (apply.exitCode !== 0) throw new ProbeError(`cannot apply the state patch: ${apply.output.slice(0, 500)}`);
}
