/** One task environment (design.md). Providers: `local` (bubblewrap) and `docker`. */
import type { EnvState } from '../schema/task.ts';

export interface ExecOptions {
  timeoutMs?: number;
  /** Inside the sandbox; defaults to the task's workdir. */
  cwd?: string;
  env?: Record<string, string>;
}

export interface ExecResult {
  /** stdout and stderr interleaved, as a terminal would show them; capped. */
  output: string;
  exitCode: number;
  timedOut: boolean;
  durationMs: number;
  /** Output beyond the cap was dropped. */
  truncated: boolean;
}

export interface Sandbox {
  /** Where the repository is, inside the sandbox (`/testbed`). */
  readonly workdir: string;
  readonly provider: string;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, data: Buffer | string): Promise<void>;
  /** Cumulative patch of the working tree against the task's base commit. */
  diff(): Promise<string>;
  /** Back to a recorded state: base commit, clean tree, patch applied. */
  restore(state: EnvState): Promise<void>;
  close(): Promise<void>;
}

export interface SandboxOptions {
  /** Model-generated commands must never run unconfined; trusted replays may. */
  allowUnconfined?: boolean;
  /** Output kept per exec, in bytes. */
  outputCap?: number;
}

export const DEFAULT_OUTPUT_CAP = 1024 * 1024;
export const DEFAULT_EXEC_TIMEOUT_MS = 120_000;
