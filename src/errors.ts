/**
 * Typed errors. `InputError` is the user's fault (bad file, field, flag) and maps to
 * exit code 2; anything else that escapes a verb is a failed run (exit 1).
 */
export class ProbeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
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
  readonly exitCode = 2;
  readonly location: InputLocation;

  constructor(location: InputLocation, problem: string, options?: { cause?: unknown }) {
    const where = location.line === undefined ? location.file : `${location.file}:${location.line}`;
    super(`${where}: ${location.field ? `field "${location.field}": ` : ''}${problem}`, options);
    this.location = location;
  }
}

export function describeCause(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
