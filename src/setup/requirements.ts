/**
 * What the local sandbox needs from the machine, checked and (as root, with apt) installed:
 * a working bubblewrap jail, and inside it — `/usr` is all a jail sees — Debian's python3
 * with pytest, the `python` alias, git. A bare machine of the project's kind (Node.js, root,
 * Debian packages reachable) runs `probe demo` after this.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { EnvironmentError } from '../errors.ts';
import { jailProblem, resetJailCheck } from '../sandbox/jail.ts';
import { waitForAptLocks } from './apt-lock.ts';

export interface Requirement {
  name: string;
  /** Debian packages that provide it. */
  packages: string[];
  /** Why it is missing, or null when present. */
  problem(): string | null;
}

/** Runs a program from /usr alone, as a jail would find it. */
function runsFromUsr(file: string, args: string[]): boolean {
  if (!existsSync(file)) return false;
  return spawnSync(file, args, { stdio: 'ignore', env: { PATH: '/usr/local/bin:/usr/bin:/bin' } }).status === 0;
}

export const REQUIREMENTS: readonly Requirement[] = [
  { name: 'bubblewrap jail', packages: ['bubblewrap'], problem: jailProblem },
  {
    name: 'python3 with pytest (in /usr)',
    packages: ['python3', 'python3-pytest'],
    problem: () => (runsFromUsr('/usr/bin/python3', ['-c', 'import pytest']) ? null : '/usr/bin/python3 cannot import pytest'),
  },
  {
    name: '`python` alias',
    packages: ['python-is-python3'],
    problem: () => (runsFromUsr('/usr/bin/python', ['--version']) ? null : '/usr/bin/python is missing'),
  },
  { name: 'git', packages: ['git'], problem: () => (runsFromUsr('/usr/bin/git', ['--version']) ? null : '/usr/bin/git is missing') },
];

export interface RequirementStatus {
  name: string;
  packages: string[];
  problem: string | null;
}

export function checkRequirements(): RequirementStatus[] {
  return REQUIREMENTS.map((r) => ({ name: r.name, packages: r.packages, problem: r.problem() }));
}

export function installCommand(packages: string[]): string {
  return `apt-get update && apt-get install -y --no-install-recommends ${packages.join(' ')}`;
}

/** Whether this process could install Debian packages itself. */
export function canInstall(): boolean {
  return process.getuid?.() === 0 && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** How long setup waits for another process's apt or dpkg lock (a fresh machine's unattended upgrades take minutes). */
export const APT_LOCK_WAIT_S = 600;

/**
 * Runs `apt-get ARGS` as setup does: after waiting for apt's locks (apt-lock.ts), and with
 * apt's own wait for the dpkg lock, for a process that takes it in between.
 */
export function aptGet(args: string[], options: { log: (line: string) => void; waitS?: number }): SpawnSyncReturns<Buffer> {
  const waitS = options.waitS ?? APT_LOCK_WAIT_S;
  waitForAptLocks(waitS, options.log);
  return spawnSync('apt-get', ['-o', `DPkg::Lock::Timeout=${waitS}`, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/** The machine lacks what the jail needs: an environment to fix (exit 2). */
export class MissingRequirements extends EnvironmentError {
  constructor(
    readonly missing: RequirementStatus[],
    detail: string,
  ) {
    super(detail);
  }
}

/**
 * Makes sure every requirement holds. Missing ones are installed when `install` is set and
 * this process can (root with apt-get), saying so on `log`; otherwise a MissingRequirements
 * error names each problem and the exact command.
 */
export function ensureRequirements(options: { install: boolean; log: (line: string) => void }): void {
  let missing = checkRequirements().filter((r) => r.problem);
  if (missing.length === 0) return;
  const packages = [...new Set(missing.flatMap((r) => r.packages))];
  if (options.install && canInstall()) {
    options.log(`probe: installing what the jailed sandbox needs: ${packages.join(' ')} (${installCommand(packages)})\n`);
    const update = aptGet(['update', '-qq'], options);
    const install = update.status === 0 ? aptGet(['install', '-y', '-qq', '--no-install-recommends', ...packages], options) : update;
    if (install.status !== 0)
      throw new MissingRequirements(
        missing,
        `installing ${packages.join(' ')} failed (apt-get exit ${install.status}); run \`${installCommand(packages)}\` and try again`,
      );
    resetJailCheck();
    missing = checkRequirements().filter((r) => r.problem);
    if (missing.length === 0) return;
  }
  const lines = missing.map((r) => `${r.name}: ${r.problem}`).join('; ');
  const how = canInstall()
    ? `run \`npx probe setup\` (or \`${installCommand(packages)}\`)`
    : `as root, run \`${installCommand(packages)}\``;
  throw new MissingRequirements(missing, `the local sandbox cannot run here — ${lines}. To fix: ${how}, or use --sandbox docker`);
}
