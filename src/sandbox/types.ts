/**
 * One task environment (design.md). Providers: `local` (bubblewrap) and `docker`.
 *
 * Everything inside a sandbox is written by an attacker (the model): the host never opens
 * a path the sandbox controls. Files go in and out through the jail itself (`stdin` to a
 * command running as the sandbox user), so a planted symlink resolves inside the jail.
 */
import type { ImageSources } from '../settings/image-sources.ts';
import type { EnvState } from '../schema/task.ts';

export interface ExecOptions {
  timeoutMs?: number;
  /** Inside the sandbox; defaults to the task's workdir. */
  cwd?: string;
  env?: Record<string, string>;
  /** Bytes fed to the command's standard input (closed at once when absent). */
  stdin?: Buffer | string;
  /** Output kept for this command, in bytes (default: the sandbox's cap). */
  outputCap?: number;
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
  /** Runs as the sandbox's unprivileged user, with no capabilities and no network. */
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** A file's bytes, read by the sandbox user inside the jail. */
  readFile(path: string): Promise<Buffer>;
  /** Writes a file as the sandbox user inside the jail (parent directories created). */
  writeFile(path: string, data: Buffer | string): Promise<void>;
  /** Cumulative patch of the working tree against the task's base commit (any size). */
  diff(): Promise<string>;
  /**
   * Back to a recorded state, as if new: the repository (its `.git` included) a fresh copy
   * of the base commit with the patch applied, an empty /tmp and home, no process left
   * from earlier commands. Nothing a previous use wrote survives.
   */
  restore(state: EnvState): Promise<void>;
  close(): Promise<void>;
}

export interface SandboxOptions {
  /** Output kept per exec, in bytes. */
  outputCap?: number;
  /** Where a task's image comes from when the engine lacks it, and what its derived image's build may fetch (docker sandbox). */
  imageSources?: ImageSources;
}

export const DEFAULT_OUTPUT_CAP = 1024 * 1024;
export const DEFAULT_EXEC_TIMEOUT_MS = 120_000;
/** Output kept when reading a file or a patch out of a sandbox: "any size" within reason. */
export const FILE_OUTPUT_CAP = 512 * 1024 * 1024;

/**
 * Resource limits of every sandboxed command (docs/trajectories.md, "Sandboxes"). Per command: processes;
 * per process: data memory, size of any one file written; per sandbox: the disk its tree
 * and /tmp can fill (where the provider can enforce it).
 */
export const LIMITS = {
  /** RLIMIT_NPROC inside the command's own user namespace (a fork bomb stops here). */
  processes: 1024,
  /** RLIMIT_DATA per process: heap and anonymous memory. */
  memoryBytes: 4 * 2 ** 30,
  /** RLIMIT_FSIZE: no single file larger. */
  fileBytes: 1 * 2 ** 30,
  /** The sandbox's writable tree + /tmp (a size-limited tmpfs where the host allows one). */
  diskBytes: 4 * 2 ** 30,
} as const;

/**
 * The `ulimit` call a jailed shell makes on itself (hard and soft, so the command cannot
 * raise them) before the command. One call, no subshell: it runs before every command.
 * `hardCeilings` are the limits the shell inherits (KiB / count, Infinity for unlimited);
 * a ceiling already lower is kept, since raising a hard limit would fail.
 */
export function ulimitCommand(hardCeilings: Partial<Record<'u' | 'd' | 'f', number>> = {}): string {
  const wanted: Array<['u' | 'd' | 'f' | 'c', number]> = [
    ['u', LIMITS.processes],
    ['d', LIMITS.memoryBytes / 1024],
    ['f', LIMITS.fileBytes / 1024],
    ['c', 0],
  ];
  return `ulimit -HS ${wanted.map(([flag, value]) => `-${flag} ${Math.min(value, flag === 'c' ? value : (hardCeilings[flag] ?? Infinity))}`).join(' ')}`;
}
