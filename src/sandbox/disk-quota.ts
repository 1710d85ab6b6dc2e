/**
 * The disk a local sandbox can fill: when probe runs as root, each sandbox's directory is
 * a tmpfs of LIMITS.diskBytes (pages are used only as files are written), so a command
 * that writes without end fills its own tmpfs, not the host's disk. Without root there is
 * no mount: the per-file limit (RLIMIT_FSIZE) is the bound, as docs/trajectories.md says.
 *
 * A mount outlives a process killed with SIGKILL; each root records its owner's pid, and
 * the next process unmounts the roots of owners that are gone.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIMITS } from './types.ts';
import { processAlive } from '../util/process-alive.ts';
import { readTextFile } from '../util/safe-tree.ts';

export const SANDBOX_PREFIX = 'probe-sandbox-';
const OWNER_FILE = '.probe-owner';

function mountedRoots(): Set<string> {
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return new Set();
  }
  // Field 5 is the mount point, octal-escaped.
  return new Set(
    text
      .split('\n')
      .map((line) => line.split(' ')[4] ?? '')
      .filter(Boolean)
      .map((p) => p.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))),
  );
}

/** The quota in bytes: LIMITS.diskBytes, or PROBE_SANDBOX_DISK_MB (tests use a small one). */
export function diskQuotaBytes(): number {
  const mb = Number(process.env.PROBE_SANDBOX_DISK_MB);
  return Number.isFinite(mb) && mb > 0 ? Math.round(mb * 2 ** 20) : LIMITS.diskBytes;
}

/** Mounts a size-limited tmpfs at `root` when running as root; returns whether it did. */
export function mountQuota(root: string): boolean {
  if (process.getuid?.() !== 0) return false;
  const mounted = spawnSync(
    'mount',
    ['-t', 'tmpfs', '-o', `size=${diskQuotaBytes()},nr_inodes=1000000,mode=0755,nosuid,nodev`, 'probe-sandbox', root],
    { encoding: 'utf8' },
  );
  if (mounted.status !== 0) return false; // e.g. a container without CAP_SYS_ADMIN: the per-file limit remains
  writeFileSync(join(root, OWNER_FILE), String(process.pid), { mode: 0o644 });
  return true;
}

export function unmountQuota(root: string): void {
  spawnSync('umount', ['-l', root], { stdio: 'ignore' });
}

let swept = false;
/** Unmounts and removes sandbox roots whose owning process is gone (once per process). */
export function sweepDeadQuotas(): void {
  if (swept || process.getuid?.() !== 0) return;
  swept = true;
  const mounts = mountedRoots();
  let names: string[] = [];
  try {
    names = readdirSync(tmpdir()).filter((n) => n.startsWith(SANDBOX_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const root = join(tmpdir(), name);
    if (!mounts.has(root)) continue;
    let owner = NaN;
    try {
      // The temporary directory is everyone's: a FIFO planted as the owner file must not block the sweep.
      owner = Number(readTextFile(join(root, OWNER_FILE), { root, what: 'a sandbox root' }));
    } catch {
      /* unreadable: treat as gone */
    }
    if (Number.isInteger(owner) && owner > 0 && processAlive(owner)) continue;
    unmountQuota(root);
    rmSync(root, { recursive: true, force: true });
  }
}
