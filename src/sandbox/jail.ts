/**
 * The bubblewrap jail every local sandbox command runs in. A root-run bubblewrap keeps
 * every capability inside (CapEff 000001fffeffffff: one `mount` reaches the host disk), so
 * the jail is built as an unprivileged user from the start:
 *
 * - when probe runs as root, bwrap itself is started as an unprivileged host uid (one per
 *   sandbox, from a range no account uses), so even a jail escape lands as nobody;
 * - inside, a user namespace maps that uid to 1000, every capability is dropped, no new
 *   privileges (bubblewrap always sets it), no further user namespaces;
 * - network, pid, ipc, uts and cgroup namespaces unshared; `/usr` read-only; of `/etc` only
 *   what programs need to run (no shadow, no host accounts: a passwd of its own);
 * - `/dev` read-only, its `/dev/shm` a directory of the sandbox's own root: bubblewrap's `/dev`
 *   is a tmpfs of half the host's memory, writable by the jail user, where one command could
 *   hold gigabytes of host memory outside the sandbox's disk quota (disk-quota.ts);
 * - limits (types.ts LIMITS) set as hard rlimits by the jailed shell before the command.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onExit } from '../util/shutdown.ts';
import { ulimitCommand } from './types.ts';

/** The sandbox user, inside. */
export const JAIL_UID = 1000;
export const JAIL_HOME = '/tmp';
/** Tools that run inside every sandbox (the editors), mounted read-only here. */
export const TOOLS_MOUNT = '/opt/probe-tools';
/** The task's base tree, read-only: restore copies it into the workdir. */
export const BASE_MOUNT = '/opt/probe-base';

export const TOOLS_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'tools');

/**
 * What of /etc programs in a jail need: the loader, alternatives, time zone, certificates,
 * interpreter config. Not `gitconfig`: a host's system git config holds credential helpers
 * and `http.extraHeader` tokens, and git in a jail needs none of it.
 */
const ETC_ENTRIES = [
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'hosts',
  'host.conf',
  'mime.types',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'inputrc',
  'bash.bashrc',
  'profile',
  'magic',
  'python3',
  'python3.11',
  'python3.12',
  'python3.13',
  'debian_version',
  'os-release',
];

/** Host uids for jails run by root: above any account, below the 32-bit overflow ids. */
const HOST_UID_BASE = 200_000;
const HOST_UID_SPAN = 800_000;

export interface JailIdentity {
  /** Host uid/gid bwrap runs as; undefined when probe is not root (the user is unprivileged already). */
  hostUid?: number;
  hostGid?: number;
}

export function newJailIdentity(): JailIdentity {
  if (process.getuid?.() !== 0) return {};
  const uid = HOST_UID_BASE + Math.floor(Math.random() * HOST_UID_SPAN);
  return { hostUid: uid, hostGid: uid };
}

/**
 * Host files every jail binds read-only, made once per process in a root-owned directory
 * any uid can read: the editors (probe's own sources may sit under a 0700 home) and the
 * jail's /etc/passwd and /etc/group.
 */
let shared: { dir: string; tools: string; passwd: string; group: string } | undefined;
function sharedFiles(): NonNullable<typeof shared> {
  if (shared) return shared;
  const dir = mkdtempSync(join(tmpdir(), 'probe-jail-'));
  chmodSync(dir, 0o755);
  const tools = join(dir, 'tools');
  cpSync(TOOLS_SOURCE, tools, { recursive: true });
  spawnSync('chmod', ['-R', 'a+rX', tools]);
  const passwd = join(dir, 'passwd');
  const group = join(dir, 'group');
  writeFileSync(
    passwd,
    `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${JAIL_UID}:${JAIL_UID}:sandbox:${JAIL_HOME}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    { mode: 0o644 },
  );
  writeFileSync(group, `root:x:0:\nsandbox:x:${JAIL_UID}:\nnogroup:x:65534:\n`, { mode: 0o644 });
  shared = { dir, tools, passwd, group };
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  return shared;
}

/**
 * The Node.js that runs probe, for the JavaScript tasks' tests: under /usr it is in the jail
 * already; elsewhere (nvm, a tarball in /opt) its directory is bound read-only at NODE_MOUNT.
 */
const NODE_MOUNT = '/opt/probe-node';
const nodeDir = dirname(process.execPath);
const nodeBind = nodeDir.startsWith('/usr/') ? [] : ['--ro-bind', nodeDir, NODE_MOUNT];
const JAIL_PATH = `/usr/local/bin:/usr/bin:/bin${nodeBind.length ? `:${NODE_MOUNT}` : ''}`;

export interface JailMounts {
  /** Host directory bound read-write at the workdir. */
  work: string;
  workdir: string;
  /** Host directory bound read-write at /tmp (also the home). */
  tmp: string;
  /** Host directory bound read-write at /dev/shm: beside `work` and `tmp`, inside the same quota. */
  shm: string;
  /** Host checkout of the base tree, bound read-only at BASE_MOUNT. */
  base: string;
}

/** The bwrap argument list that runs `argv` inside the jail. */
export function jailArgs(mounts: JailMounts, cwd: string, env: Record<string, string>, argv: string[]): string[] {
  const files = sharedFiles();
  const etc = ETC_ENTRIES.flatMap((name) => (existsSync(join('/etc', name)) ? ['--ro-bind', join('/etc', name), join('/etc', name)] : []));
  return [
    '--unshare-user',
    '--uid',
    String(JAIL_UID),
    '--gid',
    String(JAIL_UID),
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--unshare-net',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--hostname',
    'sandbox',
    '--die-with-parent',
    '--new-session',
    '--clearenv',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/sbin',
    '/sbin',
    '--symlink',
    'usr/lib',
    '/lib',
    ...(existsSync('/usr/lib64') ? ['--symlink', 'usr/lib64', '/lib64'] : []),
    '--dir',
    '/etc',
    ...etc,
    '--ro-bind',
    files.passwd,
    '/etc/passwd',
    '--ro-bind',
    files.group,
    '/etc/group',
    '--bind',
    mounts.work,
    mounts.workdir,
    '--bind',
    mounts.tmp,
    '/tmp',
    '--ro-bind',
    files.tools,
    TOOLS_MOUNT,
    '--ro-bind',
    mounts.base,
    BASE_MOUNT,
    ...nodeBind,
    '--dev',
    '/dev',
    '--bind',
    mounts.shm,
    '/dev/shm',
    // The device nodes and /dev/pts are mounts of their own and stay usable; files in /dev itself cannot be made.
    '--remount-ro',
    '/dev',
    '--proc',
    '/proc',
    // Everything but the workdir and /tmp read-only: the jail's own root is not a scratch space.
    '--remount-ro',
    '/',
    '--chdir',
    cwd,
    ...Object.entries({
      PATH: JAIL_PATH,
      HOME: JAIL_HOME,
      USER: 'sandbox',
      LANG: 'C.UTF-8',
      PYTHONDONTWRITEBYTECODE: '1',
      TERM: 'dumb',
      ...env,
    }).flatMap(([k, v]) => ['--setenv', k, v]),
    ...argv,
  ];
}

let ceilings: Partial<Record<'u' | 'd' | 'f', number>> | undefined;
/** The hard limits jailed shells inherit from this process (read once). */
function inheritedCeilings(): Partial<Record<'u' | 'd' | 'f', number>> {
  if (ceilings) return ceilings;
  const run = spawnSync('bash', ['-c', 'ulimit -Hu; ulimit -Hd; ulimit -Hf'], { encoding: 'utf8' });
  const [u, d, f] = run.stdout
    .trim()
    .split('\n')
    .map((v) => (v === 'unlimited' || v === undefined ? Infinity : Number(v)));
  ceilings = { u: u ?? Infinity, d: d ?? Infinity, f: f ?? Infinity };
  return ceilings;
}

/** `bash -c` running `command` after the limits; `merge` interleaves stderr into stdout as a terminal shows them. */
export function jailedShell(command: string, merge: boolean): string[] {
  return ['bash', '-c', `${ulimitCommand(inheritedCeilings())} || exit 125\n${merge ? 'exec 2>&1\n' : ''}eval "$1"`, 'bash', command];
}

/** A directory the jail user can write (created by the host, owned by the jail's host uid). */
export function makeJailDir(path: string, identity: JailIdentity): void {
  mkdirSync(path, { mode: 0o755 });
  if (identity.hostUid !== undefined) spawnSync('chown', [`${identity.hostUid}:${identity.hostGid}`, path]);
}

let jailProblemMemo: string | null | undefined;
/** Forgets the result of the jail check (after bubblewrap was installed). */
export function resetJailCheck(): void {
  jailProblemMemo = undefined;
}

/**
 * Why a jail cannot be made on this machine (bubblewrap missing, too old, or user
 * namespaces refused), or null when it can. Tried once per process with a real jail.
 */
export function jailProblem(): string | null {
  if (jailProblemMemo !== undefined) return jailProblemMemo;
  const help = spawnSync('bwrap', ['--help'], { encoding: 'utf8' });
  if (help.error || help.status !== 0) {
    jailProblemMemo =
      'bubblewrap (bwrap) is not installed: run `npx probe setup` (as root it installs it), or `apt-get install bubblewrap`';
    return jailProblemMemo;
  }
  if (!help.stdout.includes('--disable-userns')) {
    jailProblemMemo = 'bubblewrap is too old (needs --disable-userns, bubblewrap 0.8 or newer)';
    return jailProblemMemo;
  }
  const identity = newJailIdentity();
  const root = mkdtempSync(join(tmpdir(), 'probe-jailcheck-'));
  try {
    chmodSync(root, 0o755);
    for (const d of ['work', 'tmp', 'shm', 'base']) makeJailDir(join(root, d), identity);
    const run = spawnSync(
      'bwrap',
      jailArgs(
        { work: join(root, 'work'), workdir: '/testbed', tmp: join(root, 'tmp'), shm: join(root, 'shm'), base: join(root, 'base') },
        '/testbed',
        {},
        jailedShell('grep CapEff /proc/self/status; id -u', true),
      ),
      {
        encoding: 'utf8',
        uid: identity.hostUid,
        gid: identity.hostGid,
        cwd: root,
        timeout: 30_000,
      },
    );
    const ok = run.status === 0 && /CapEff:\s*0+\n/.test(run.stdout) && run.stdout.trim().endsWith(String(JAIL_UID));
    jailProblemMemo = ok
      ? null
      : `bubblewrap cannot make an unprivileged jail here (user namespaces refused?): ${(run.stderr || run.stdout || String(run.error)).trim().slice(0, 300)}`;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return jailProblemMemo;
}
