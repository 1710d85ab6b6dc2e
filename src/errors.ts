/**
 * Typed errors. Every `ProbeError` is a message for the user, printed as one line without
 * a stack trace; its `exitCode` says whose move it is: 2 for bad input or an environment
 * the user must fix (a file, field, flag, path that cannot be written, port in use), 1 for
 * a run that failed (a server that broke its contract, an interrupted run). Anything else
 * that escapes a verb is a bug in probe and keeps its stack trace (src/cli/exit.ts).
 */
export type ExitCode = 1 | 2;

export class ProbeError extends Error {
  readonly exitCode: ExitCode;

  constructor(message: string, options?: { cause?: unknown; exitCode?: ExitCode }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.exitCode = options?.exitCode ?? 1;
  }
}

export interface InputLocation {
  /** The file (or URL, or flag) the bad input came from. */
  file: string;
  /** 1-based line, for line-oriented files. */
  line?: number;
  /** The offending field, dotted for nested ones (`state.patch`). */
  field?: string;
}

export class InputError extends ProbeError {
  declare readonly exitCode: 2;
  readonly location: InputLocation;

  constructor(location: InputLocation, problem: string, options?: { cause?: unknown }) {
    const where = location.line === undefined ? location.file : `${location.file}:${location.line}`;
    super(`${where}: ${location.field ? `field "${location.field}": ` : ''}${problem}`, { ...options, exitCode: 2 });
    this.location = location;
  }
}

/**
 * The machine, not the input, stops the run: an output path that cannot be created or
 * written, a port in use or not allowed. The message names the path or port.
 */
export class EnvironmentError extends ProbeError {
  declare readonly exitCode: 2;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, exitCode: 2 });
  }
}

export function describeCause(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A Node system error (`EACCES`, `EADDRINUSE`, …), as thrown by `fs` and `net`. */
export function systemErrorCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return error instanceof Error && typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : undefined;
}

/**
 * The reason of a system error without Node's repetition of the call and path
 * ("EACCES: permission denied, open '/x'" → "permission denied (EACCES)").
 */
export function systemReason(error: unknown): string {
  const code = systemErrorCode(error);
  const message = describeCause(error);
  if (!code) return message;
  const reason = new RegExp(`(?:^|\\s)${code}: ([^,]+)`).exec(message)?.[1] ?? message;
  return `${reason} (${code})`;
}
