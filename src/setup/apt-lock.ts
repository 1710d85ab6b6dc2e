/**
 * apt's locks, and who holds them. On a fresh machine unattended-upgrades or cloud-init often
 * runs apt at boot; an apt-get started then fails at once ("Could not get lock"), so setup
 * waits for the locks instead, saying who holds them. apt-get's own `DPkg::Lock::Timeout`
 * covers only the dpkg frontend lock (apt 2.6's `update` ignores it for the lists lock), so
 * the holders are read from /proc/locks, where Linux lists every fcntl lock.
 */
import { readFileSync, statSync } from 'node:fs';

/** The locks apt-get update and install take. */
export const APT_LOCKS = ['/var/lib/dpkg/lock-frontend', '/var/lib/dpkg/lock', '/var/lib/apt/lists/lock', '/var/cache/apt/archives/lock'];

export interface LockHolder {
  lock: string;
  /** null for an open-file-description lock, which has no owning process. */
  pid: number | null;
  /** The holder's command name (/proc/PID/comm), where readable. */
  command: string | null;
}

/** Linux's dev_t split as /proc/locks writes it (`fe:00`). */
function deviceOf(dev: number): string {
  const major = (dev >> 8) & 0xfff;
  const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
  return `${major.toString(16).padStart(2, '0')}:${minor.toString(16).padStart(2, '0')}`;
}

/** Who holds `lock`, or undefined when no one does (or the lock file does not exist). */
export function lockHolder(lock: string, locks = readProcLocks()): LockHolder | undefined {
  const stat = statSync(lock, { throwIfNoEntry: false });
  if (!stat) return undefined;
  const key = `${deviceOf(stat.dev)}:${stat.ino}`;
  for (const line of locks.split('\n')) {
    // `1: POSIX  ADVISORY  WRITE 1234 fe:00:402117 0 EOF`; lines with `->` are processes waiting, not holding.
    const fields = line.trim().split(/\s+/);
    if (fields[1] === '->' || fields[5] !== key) continue;
    const pid = Number(fields[4]);
    if (!Number.isInteger(pid) || pid <= 0) return { lock, pid: null, command: null };
    let command: string | null = null;
    try {
      command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      // gone, or not ours to read: the pid says enough
    }
    return { lock, pid, command };
  }
  return undefined;
}

function readProcLocks(): string {
  try {
    return readFileSync('/proc/locks', 'utf8');
  } catch {
    return ''; // not Linux, or no /proc: apt-get's own lock timeout is all there is
  }
}

function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function describeHolder(h: LockHolder): string {
  return `${h.lock} is held by ${h.pid === null ? 'another process' : `process ${h.pid}${h.command ? ` (${h.command})` : ''}`}`;
}

/**
 * Waits until no apt lock is held, up to `timeoutS` seconds, saying once per holder what it
 * waits for. Returns the holder still there at the end, if any (apt-get then reports it).
 */
export function waitForAptLocks(timeoutS: number, log: (line: string) => void): LockHolder | undefined {
  const deadline = Date.now() + timeoutS * 1000;
  const told = new Set<string>();
  for (;;) {
    const locks = readProcLocks();
    const holder = APT_LOCKS.map((lock) => lockHolder(lock, locks)).find((h) => h !== undefined);
    if (!holder || Date.now() >= deadline) return holder;
    const said = `${holder.lock}#${holder.pid}`;
    if (!told.has(said)) {
      told.add(said);
      log(`probe: waiting for apt's lock: ${describeHolder(holder)} (another apt-get, or unattended upgrades); up to ${timeoutS} s\n`);
    }
    sleepMs(500);
  }
}
