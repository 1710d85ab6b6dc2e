/**
 * git run by probe on the host over a task set's repositories, which an attacker wrote.
 * None of the host's configuration is read (the system's `/etc/gitconfig`, root's
 * `~/.gitconfig` and XDG files: credential helpers, filter drivers such as git-lfs's
 * smudge, attribute files, hook paths), nothing of probe's own environment reaches git (a
 * `GIT_DIR` or `GIT_OBJECT_DIRECTORY` inherited from a hook would choose the repository),
 * replace refs are ignored and a missing object is never fetched from a promisor remote.
 * Repositories probe makes get no template (`git init --template=`): no hooks.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ProbeError } from '../errors.ts';
import { onExit } from '../util/shutdown.ts';

let home: string | undefined;
/** An empty directory of this process's: git finds no `~/.gitconfig`, `~/.config/git/attributes` or `ignore` in it. */
function emptyHome(): string {
  if (home) return home;
  const dir = mkdtempSync(`${tmpdir()}/probe-git-home-`);
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  home = dir;
  return dir;
}

/** The whole environment of a host git (`extra`: GIT_DIR, GIT_OBJECT_DIRECTORY, an identity). */
export function hostGitEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    LC_ALL: 'C',
    HOME: emptyHome(),
    XDG_CONFIG_HOME: emptyHome(),
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_NO_LAZY_FETCH: '1',
    GIT_TERMINAL_PROMPT: '0',
    ...extra,
  };
}

export interface HostGitOptions {
  cwd?: string;
  env?: Record<string, string>;
  input?: string;
  /** Bytes of output kept; past it git is killed and `error.code` is ENOBUFS. */
  maxBuffer?: number;
}

/** Runs host git as above; the caller reads status and output. */
export function runHostGit(args: string[], options: HostGitOptions = {}): SpawnSyncReturns<string> {
  return spawnSync('git', args, {
    cwd: options.cwd,
    env: hostGitEnv(options.env),
    input: options.input,
    encoding: 'utf8',
    maxBuffer: options.maxBuffer ?? 64 * 1024 * 1024,
  });
}

/** Runs host git and returns its trimmed output, or a ProbeError with git's own words. */
export function hostGit(args: string[], options: HostGitOptions = {}): string {
  const run = runHostGit(args, options);
  if (run.status !== 0)
    throw new ProbeError(
      `git ${args.join(' ')} failed${options.cwd ? ` in ${options.cwd}` : ''}: ${(run.stderr ?? String(run.error)).trim()}`,
    );
  return run.stdout.trim();
}
