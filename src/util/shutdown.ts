/**
 * The one place this process shuts down from. Whatever holds something to release —
 * Docker containers, server requests in flight, a listening server, temporary checkouts,
 * run locks — registers here instead of installing its own signal handler, so what runs
 * on Ctrl-C no longer depends on which module happened to register first.
 *
 * On SIGINT or SIGTERM: the interrupt is noted (results finished from here on are not
 * saved, see interrupt.ts), the shutdown cleanups run one after another in the order they
 * were registered, then the exit cleanups, then the signal is raised again so the process
 * ends as a killed process does (status 128 + signal), which is what callers and shells
 * read. A second signal during the cleanups stops waiting for them. On a normal exit only
 * the exit cleanups run. Without the registry a re-raised signal ended the process before
 * its `exit` handlers could remove temporary checkouts and locks.
 */
import { noteInterrupt } from './interrupt.ts';

/** Releases something on SIGINT/SIGTERM; may take its time (it is awaited). */
export type ShutdownCleanup = (signal: NodeJS.Signals) => void | Promise<void>;
/** Removes something on the way out, however the process ends: synchronous (an exiting process runs no more callbacks). */
export type ExitCleanup = () => void;

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const shutdownCleanups: ShutdownCleanup[] = [];
const exitCleanups: ExitCleanup[] = [];
const handlers = new Map<NodeJS.Signals, () => void>();
let shuttingDown = false;

/** Runs `cleanup` when the process is told to stop; returns a function that takes it back. */
export function onShutdown(cleanup: ShutdownCleanup): () => void {
  return register(shutdownCleanups, cleanup);
}

/** Runs `cleanup` when the process ends, normally or by SIGINT/SIGTERM; returns a function that takes it back. */
export function onExit(cleanup: ExitCleanup): () => void {
  return register(exitCleanups, cleanup);
}

function register<T>(list: T[], cleanup: T): () => void {
  install();
  list.push(cleanup);
  return () => {
    const at = list.indexOf(cleanup);
    if (at >= 0) list.splice(at, 1);
  };
}

function install(): void {
  if (handlers.size > 0) return;
  for (const signal of SIGNALS) {
    const handler = () => void shutDown(signal);
    handlers.set(signal, handler);
    process.on(signal, handler);
  }
  process.once('exit', runExitCleanups);
}

async function shutDown(signal: NodeJS.Signals): Promise<void> {
  noteInterrupt(signal);
  if (shuttingDown) return raise(signal);
  shuttingDown = true;
  for (const cleanup of [...shutdownCleanups]) {
    try {
      await cleanup(signal);
    } catch (error) {
      // One cleanup that fails must not keep the others from running; say so, since something may be left behind.
      process.stderr.write(`probe: a cleanup on ${signal} failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
  raise(signal);
}

function runExitCleanups(): void {
  for (const cleanup of exitCleanups.splice(0)) {
    try {
      cleanup();
    } catch {
      // Best effort on the way out: the rest still run.
    }
  }
}

/** Ends the process by `signal` as if nothing had handled it: the exit cleanups, then the default action. */
function raise(signal: NodeJS.Signals): void {
  runExitCleanups();
  for (const [s, handler] of handlers) process.off(s, handler);
  // On the next turn: rejections the cleanups caused (aborted requests) settle first.
  setImmediate(() => process.kill(process.pid, signal));
}
