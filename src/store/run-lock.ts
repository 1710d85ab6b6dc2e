/**
 * One writer per run directory. Two processes resuming the same run would both compute
 * every unfinished item (the lines stay whole, the work and the machine time do not). The
 * lock names its holder; a holder that died (kill -9 leaves the file) is detected on this
 * host by its pid and taken over. A lock from another host cannot be checked: it is
 * reported, with how to clear it.
 *
 * Race-free by construction, not by timing:
 * - the lock is created exclusively (linked into place, which fails when the name exists;
 *   `open` with `wx` where there are no hard links), so of processes that start together
 *   exactly one creates it;
 * - a stale lock is removed only by the process holding `.lock.break`, itself created
 *   exclusively, after it has read the lock again under that guard: no process can remove
 *   a lock another has just taken, and every taker still goes through the exclusive create.
 */
import { linkSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { EnvironmentError, InputError, systemErrorCode, systemReason } from '../errors.ts';
import { processAlive } from '../util/process-alive.ts';
import { readRegularFileIfPresent } from '../util/safe-tree.ts';
import { onExit } from '../util/shutdown.ts';

interface Holder {
  pid: number;
  host: string;
  since: string;
}

const held = new Set<string>();

/**
 * Creates `file` holding this process's name, or returns false when it exists. The content
 * is written to a file of our own first and linked into place (link fails if the name
 * exists), so a lock is never seen half-written; where the file system has no hard links,
 * an exclusive `open` with `wx` does the same with a moment's window.
 */
function createExclusive(file: string): boolean {
  const content = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() } satisfies Holder);
  const mine = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  const fail = (error: unknown) => new EnvironmentError(`${file}: cannot create the run lock: ${systemReason(error)}`, { cause: error });
  try {
    writeFileSync(mine, content, { flag: 'wx' });
  } catch (error) {
    throw fail(error);
  }
  try {
    linkSync(mine, file);
    return true;
  } catch (error) {
    const code = systemErrorCode(error);
    if (code === 'EEXIST') return false;
    if (!code || !NO_HARD_LINKS.has(code)) throw fail(error);
  } finally {
    rmSync(mine, { force: true });
  }
  try {
    writeFileSync(file, content, { flag: 'wx' });
    return true;
  } catch (error) {
    if (systemErrorCode(error) === 'EEXIST') return false;
    throw fail(error);
  }
}

const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

type Reading = { state: 'gone' } | { state: 'held'; holder: Holder } | { state: 'stale'; text: string };

/**
 * Who holds `file`. Empty or cut short means a holder that died between create and write
 * (or, without hard links, one writing right now): stale, but only after a pause.
 */
function read(file: string): Reading {
  let bytes: Buffer | undefined;
  try {
    // Through safe-tree: a FIFO or a link planted as the lock of a run directory must not block or redirect the run.
    bytes = readRegularFileIfPresent(file, { root: dirname(file), what: 'the run directory' });
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new EnvironmentError(`${file}: cannot read the run lock: ${systemReason(error)}`, { cause: error });
  }
  if (bytes === undefined) return { state: 'gone' };
  const text = bytes.toString('utf8');
  let holder: Holder | undefined;
  try {
    holder = JSON.parse(text) as Holder;
  } catch {
    holder = undefined;
  }
  if (!holder || typeof holder.pid !== 'number') return { state: 'stale', text };
  const dead = holder.host === hostname() && (holder.pid === process.pid || !processAlive(holder.pid));
  return dead ? { state: 'stale', text } : { state: 'held', holder };
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function busy(file: string, holder: Holder): InputError {
  return new InputError(
    { file },
    `this run is being written by process ${holder.pid} on ${holder.host} (since ${holder.since}); wait for it, or delete this file if that process is gone`,
  );
}

/** Removes the stale lock whose content was `text`, unless it changed: under `.lock.break`, so one process at a time. */
function breakStale(file: string, text: string): void {
  const guard = `${file}.break`;
  if (!createExclusive(guard)) {
    const guardHolder = read(guard);
    // Held for the few microseconds of a takeover; one left behind names a process that died inside it.
    if (guardHolder.state === 'stale')
      throw new InputError(
        { file: guard },
        `left by a process that died while taking over a stale lock; delete it and ${file}, then rerun`,
      );
    return; // another process is taking over: look again
  }
  try {
    const now = read(file);
    if (now.state === 'stale' && now.text === text) unlinkSync(file);
  } finally {
    rmSync(guard, { force: true });
  }
}

/** Takes the lock of `dir` for this process (again, if it holds it already); released when the process exits. */
export function lockRunDir(dir: string): void {
  const file = join(dir, '.lock');
  if (held.has(file)) return;
  for (let attempt = 0; ; attempt++) {
    if (createExclusive(file)) break;
    const reading = read(file);
    if (reading.state === 'held') throw busy(file, reading.holder);
    if (attempt >= 50)
      throw new InputError(
        { file },
        'could not take over this stale lock (other processes kept contending); delete it if no probe process writes this run',
      );
    if (reading.state === 'stale') {
      // An empty lock may be one being written this instant: give its writer a moment before calling it stale.
      if (reading.text === '' && attempt === 0) {
        pause(50);
        continue;
      }
      breakStale(file, reading.text);
    }
    pause(attempt === 0 ? 1 : 5);
  }
  held.add(file);
  if (held.size === 1)
    onExit(() => {
      for (const f of held) rmSync(f, { force: true });
    });
}
