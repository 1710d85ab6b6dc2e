/**
 * What every provider does as its sandbox user, in the same words: files in and out through
 * `cat` (the path in an environment variable, never a shell word, so a link the model
 * planted resolves inside the jail), and `restore` as a rebuild of the tree from the
 * read-only base copy (`$PROBE_BASE_TREE`) followed by the state's patch.
 */
import { ProbeError } from '../errors.ts';
import type { EnvState } from '../schema/task.ts';
import { applyStatePatch } from './git-state.ts';
import { FILE_OUTPUT_CAP, type Sandbox } from './types.ts';

/** Run with `PROBE_PATH`, stdout kept apart from stderr and capped at FILE_OUTPUT_CAP. */
export const READ_FILE = 'cat -- "$PROBE_PATH"';
export const FILE_TIMEOUT_MS = 60_000;

/** A read's bytes, or why there are none. */
export function readBytes(
  provider: string,
  path: string,
  r: { stdout: Buffer; stderr?: string; exitCode: number; truncated: boolean },
): Buffer {
  if (r.exitCode !== 0)
    throw new ProbeError(
      `cannot read ${path} in the ${provider} sandbox (exit ${r.exitCode})${r.stderr?.trim() ? `: ${r.stderr.trim().slice(0, 300)}` : ''}`,
    );
  if (r.truncated) throw new ProbeError(`${path} in the ${provider} sandbox is larger than ${FILE_OUTPUT_CAP / 2 ** 20} MiB`);
  return r.stdout;
}

export async function writeThroughJail(sb: Sandbox, path: string, data: Buffer | string): Promise<void> {
  const r = await sb.exec('mkdir -p -- "$(dirname -- "$PROBE_PATH")" && cat > "$PROBE_PATH"', {
    env: { PROBE_PATH: path },
    stdin: data,
    timeoutMs: FILE_TIMEOUT_MS,
  });
  if (r.exitCode !== 0) throw new ProbeError(`cannot write ${path} in the ${sb.provider} sandbox: ${r.output.trim().slice(0, 300)}`);
}

/**
 * Empties the workdir and /tmp, then copies the base tree in (chmod first: a directory the
 * user made unreadable is still theirs); `more` clears what else a provider's user can leave.
 */
export function resetTreeScript(more?: string): string {
  return [
    'chmod -R u+rwX "$PROBE_WORKDIR" /tmp 2>/dev/null;',
    'find "$PROBE_WORKDIR" /tmp -mindepth 1 -delete &&',
    `cp -a --no-preserve=ownership "$PROBE_BASE_TREE"/. "$PROBE_WORKDIR"/${more ? ' &&' : ''}`,
    ...(more ? [more] : []),
  ].join('\n');
}

/** `restore` of a provider: the tree rebuilt by its reset script, then the state's patch. */
export async function restoreFromBase(
  sb: Sandbox,
  baseCommit: string,
  state: EnvState,
  resetScript: string,
  timeoutMs: number,
): Promise<void> {
  if (state.base_commit !== baseCommit) throw new ProbeError(`state is at ${state.base_commit}, this sandbox's task at ${baseCommit}`);
  const reset = await sb.exec(resetScript, { cwd: '/', timeoutMs });
  if (reset.exitCode !== 0)
    throw new ProbeError(`cannot reset the ${sb.provider} sandbox to ${state.base_commit}: ${reset.output.slice(0, 500)}`);
  await applyStatePatch(sb, state.patch);
}
