/**
 * What the user sees when a verb stops: one line and exit 2 for bad input or an environment
 * to fix, one line and exit 1 for a failed run, and a stack trace only for a bug in probe —
 * the one case where the trace is what the reader needs. `PROBE_DEBUG=1` adds the stack
 * (and causes) to every error, for reporting one that should not have happened.
 */
import { EnvironmentError, ProbeError, systemErrorCode, systemReason } from '../errors.ts';

/** System errors that describe the machine (paths, permissions, disk, ports), never a bug by themselves. */
const ENVIRONMENT_CODES = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'ENOSPC',
  'EDQUOT',
  'ENOTDIR',
  'EISDIR',
  'EEXIST',
  'ENOENT',
  'ENAMETOOLONG',
  'ELOOP',
  'EMFILE',
  'ENFILE',
  'EADDRINUSE',
  'EADDRNOTAVAIL',
]);

/** A system error that escaped a verb, as an EnvironmentError naming its path or address. */
export function environmentErrorOf(error: unknown): EnvironmentError | undefined {
  const code = systemErrorCode(error);
  if (!code || !ENVIRONMENT_CODES.has(code)) return undefined;
  const e = error as NodeJS.ErrnoException & { address?: string; port?: number };
  const where = e.path ?? (e.address !== undefined ? `${e.address}${e.port !== undefined ? `:${e.port}` : ''}` : undefined);
  return new EnvironmentError(`${where ? `${where}: ` : ''}cannot ${e.syscall ?? 'proceed'}: ${systemReason(error)}`, { cause: error });
}

function withCauses(error: Error): string {
  let text = error.stack ?? error.message;
  for (let cause = error.cause; cause instanceof Error; cause = cause.cause) text += `\nCaused by: ${cause.stack ?? cause.message}`;
  return text;
}

/** The exit code for an error that stopped a verb, after writing what the user should read to `write`. */
export function reportError(error: unknown, write: (text: string) => void, debug = process.env.PROBE_DEBUG === '1'): number {
  const known = error instanceof ProbeError ? error : environmentErrorOf(error);
  if (known) {
    write(`probe: ${known.message}\n`);
    if (debug) write(`${withCauses(error as Error)}\n`);
    return known.exitCode;
  }
  write(`probe: ${error instanceof Error ? withCauses(error) : String(error)}\n`);
  write('probe: this is a bug in probe (an unexpected error, not a problem with your input); please report it with the trace above\n');
  return 1;
}
