/**
 * One writer per run directory. Two processes resuming the same run would both compute
 * every unfinished item (the lines stay whole, the work and the machine time do not). The
 * lock names its holder; a holder that died (kill -9 leaves the file) is detected on this
 * host by its pid and taken over. A lock from another host cannot be checked: it is
 * reported, with how to clear it.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../errors.ts';

interface Holder { pid: number; host: string; since: string }

const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock of `dir` for this process (again, if it holds it already); released when the process exits. */
export function lockRunDir(dir: string): void {
  const file = join(dir, '.lock');
  if (held.has(file)) return;
  if (existsSync(file)) {
    let holder: Holder | undefined;
    try {
      holder = JSON.parse(readFileSync(file, 'utf8')) as Holder;
    } catch {
      holder = undefined; // a lock cut short by a crash holds nothing
    }
    const stale = !holder || (holder.host === hostname() && (holder.pid === process.pid || !alive(holder.pid)));
    if (!stale) {
      throw new InputError({ file }, `this run is being written by process ${holder!.pid} on ${holder!.host} (since ${holder!.since}); wait for it, or delete this file if that process is gone`);
    }
  }
  writeFileSync(file, JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() } satisfies Holder));
  held.add(file);
  if (held.size === 1) process.once('exit', () => { for (const f of held) rmSync(f, { force: true }); });
}
