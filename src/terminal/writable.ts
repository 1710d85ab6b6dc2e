/**
 * Where a Terminal-Bench container can be written, and how much: the disk cap.
 *
 * The container's root file system is read-only, for root too: nothing done in it reaches
 * the engine's storage on the host's disk (a storage-opt size works only on some storage
 * drivers, overlay2 on xfs with project quotas among them; a read-only root works on all).
 * What must be writable is a tmpfs, each a fixed share of one cap (disk-quota.ts: 4 GiB, or
 * PROBE_SANDBOX_DISK_MB): the task's working directory (filled from the image's at start),
 * /tmp (the agent's HOME), /dev/shm, /logs (the tests write there), /tests (root's copy of
 * the task's tests) and probe's own marker. Their pages are charged to the container's memory
 * cgroup, whose limit is the task's memory plus their sum: a write past a share fails with
 * "No space left on device" in that container alone, the task keeps its memory for its
 * processes, and the host gives one container at most the task's memory plus the cap.
 */
import { posix } from 'node:path';
import { diskQuotaBytes } from '../sandbox/disk-quota.ts';
import { TERMINAL_UID } from './image.ts';

/** probe's own state in the container (the episode marker): root's, tiny. */
export const STATE_DIR = '/opt/probe/state';
/** A place is full when less than this share of it is free: a write there has met the cap. */
const FULL_SHARE = 1 / 64;

export interface WritableLayout {
  /** HostConfig.Tmpfs: mount point → options. */
  tmpfs: Record<string, string>;
  /** The working directory's share (0 when it has none of its own). */
  workdirBytes: number;
  /** HostConfig.ShmSize. */
  shmBytes: number;
  /** Bytes all of them can hold together (added to the container's memory limit). */
  bytes: number;
  /** The places the agent, or the tests as its uid, can fill (checked for a met cap). */
  fillable: string[];
  /** The trees the agent can write (searched for what it planted). */
  agentTrees: string[];
}

/** How the cap divides, for a task whose working directory is `workdir` (none of its own when it is `/`). */
export function writableLayout(workdir: string, cap = diskQuotaBytes()): WritableLayout {
  const share = (fraction: number) => Math.max(1, Math.floor((cap * fraction) / 4096)) * 4096;
  const tmp = share(1 / 4);
  const logs = share(1 / 16);
  const tests = share(1 / 16);
  const shm = share(1 / 16);
  const state = 64 * 1024;
  const tmpfs: Record<string, string> = {
    '/tmp': `rw,nosuid,nodev,size=${tmp},mode=1777`,
    '/logs': `rw,nosuid,nodev,noexec,size=${logs},mode=0755`,
    // exec: a task's tests may run their own scripts.
    '/tests': `rw,exec,nosuid,nodev,size=${tests},mode=0755`,
    [STATE_DIR]: `rw,nosuid,nodev,noexec,size=${state},mode=0755`,
  };
  const ownWorkdir = posix.normalize(workdir) !== '/';
  const workdirBytes = ownWorkdir ? share(1 / 2) : 0;
  // exec: the agent builds and runs programs there. The image's modes come back with the copy.
  if (ownWorkdir) tmpfs[workdir] = `rw,exec,nosuid,nodev,size=${workdirBytes},uid=${TERMINAL_UID},gid=${TERMINAL_UID},mode=0755`;
  const agentTrees = [...(ownWorkdir ? [workdir] : []), '/tmp', '/dev/shm'];
  return {
    tmpfs,
    workdirBytes,
    shmBytes: shm,
    bytes: workdirBytes + tmp + logs + tests + shm + state,
    fillable: [...agentTrees, '/logs'],
    agentTrees,
  };
}

/** Prints each place's free and total bytes (`stat -f`), its path last; run with PROBE_PLACES set (colon-separated). */
export const PLACES_FREE = `IFS=: read -r -a places <<< "$PROBE_PLACES"; stat -f -c '%a %S %b %n' -- "\${places[@]}"`;

/** The places whose free space is under their share's margin (PLACES_FREE's output), each with its size. */
export function fullPlaces(output: string): string[] {
  const full: string[] = [];
  for (const line of output.split('\n')) {
    const m = /^(\d+) (\d+) (\d+) (.+)$/.exec(line.trim());
    if (!m) continue;
    const [free, block, total] = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (free < total * FULL_SHARE) full.push(`${m[4]} (${Math.round((total * block) / 2 ** 20)} MiB)`);
  }
  return full;
}
