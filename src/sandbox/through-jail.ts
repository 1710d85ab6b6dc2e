/**
 * What every provider does as its sandbox user, in the same words: a provider gives one
 * thing, a command run in its jail (`run`), and `JailedSandbox` builds the rest of the
 * `Sandbox` interface on it. Files go in and out through `cat` (the path in an environment
 * variable, never a shell word, so a link the model planted resolves inside the jail), and
 * `restore` is a rebuild of the tree from the read-only base copy (`$PROBE_BASE_TREE`)
 * followed by the state's patch.
 */
import { ProbeError } from '../errors.ts';
import type { EnvState } from '../schema/task.ts';
import { applyStatePatch, treeDiff } from './git-state.ts';
import { FILE_OUTPUT_CAP, type ExecOptions, type ExecResult, type Sandbox } from './types.ts';

/** Run with `PROBE_PATH`, stdout kept apart from stderr and capped at FILE_OUTPUT_CAP. */
const READ_FILE = 'cat -- "$PROBE_PATH"';
const FILE_TIMEOUT_MS = 60_000;

export interface RunOptions extends ExecOptions {
  /** stdout and stderr interleaved in `stdout`; otherwise stderr is kept apart, briefly. */
  merge: boolean;
}

/** A command's result as a provider's `run` gives it: stdout as bytes (a file's, for `readFile`). */
export interface RawResult {
  stdout: Buffer;
  stderr: string;
  exitCode: number;
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

/** How a provider puts its tree back to the base: its reset script (`resetTreeScript`) and the time it may take. */
export interface TreeReset {
  script: string;
  timeoutMs: number;
}

export abstract class JailedSandbox implements Sandbox {
  abstract readonly provider: string;
  abstract readonly workdir: string;
  protected abstract readonly baseCommit: string;
  protected abstract readonly reset: TreeReset;

  /** Runs a command as the sandbox user in the jail (as `exec`, stdout and stderr apart unless `merge`). */
  protected abstract run(command: string, options: RunOptions): Promise<RawResult>;
  abstract close(): Promise<void>;

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const r = await this.run(command, { ...options, merge: true });
    return {
      output: r.stdout.toString('utf8'),
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      truncated: r.truncated,
      durationMs: r.durationMs,
    };
  }

  async readFile(path: string): Promise<Buffer> {
    const r = await this.run(READ_FILE, {
      env: { PROBE_PATH: path },
      merge: false,
      outputCap: FILE_OUTPUT_CAP,
      timeoutMs: FILE_TIMEOUT_MS,
    });
    if (r.exitCode !== 0)
      throw new ProbeError(
        `cannot read ${path} in the ${this.provider} sandbox (exit ${r.exitCode})${r.stderr.trim() ? `: ${r.stderr.trim().slice(0, 300)}` : ''}`,
      );
    if (r.truncated) throw new ProbeError(`${path} in the ${this.provider} sandbox is larger than ${FILE_OUTPUT_CAP / 2 ** 20} MiB`);
    return r.stdout;
  }

  async writeFile(path: string, data: Buffer | string): Promise<void> {
    const r = await this.exec('mkdir -p -- "$(dirname -- "$PROBE_PATH")" && cat > "$PROBE_PATH"', {
      env: { PROBE_PATH: path },
      stdin: data,
      timeoutMs: FILE_TIMEOUT_MS,
    });
    if (r.exitCode !== 0) throw new ProbeError(`cannot write ${path} in the ${this.provider} sandbox: ${r.output.trim().slice(0, 300)}`);
  }

  diff(): Promise<string> {
    return treeDiff(this, this.baseCommit);
  }

  /** The tree rebuilt by the provider's reset script, then the state's patch. */
  async restore(state: EnvState): Promise<void> {
    if (state.base_commit !== this.baseCommit)
      throw new ProbeError(`state is at ${state.base_commit}, this sandbox's task at ${this.baseCommit}`);
    const reset = await this.exec(this.reset.script, { cwd: '/', timeoutMs: this.reset.timeoutMs });
    if (reset.exitCode !== 0)
      throw new ProbeError(`cannot reset the ${this.provider} sandbox to ${state.base_commit}: ${reset.output.slice(0, 500)}`);
    await applyStatePatch(this, state.patch);
  }
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
