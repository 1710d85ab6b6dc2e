/**
 * The `local` sandbox: the task repository at its workdir (`/testbed`) inside a bubblewrap
 * jail (jail.ts: an unprivileged user, no capabilities, no network), with a /tmp (also the
 * home) of its own. The sandbox's directory is root-owned and the jail writes only inside
 * `work/` and `tmp/`; every file going in or out passes through a jailed command, so the
 * host never opens a path the model could have turned into a link. `restore` rebuilds the
 * tree from a read-only copy of the base inside the jail, `.git` and /tmp included: nothing
 * a command left behind survives. No process outlives its command (pid namespace). Timeouts
 * kill the whole process group, and so does `close` for a command still running; output is
 * capped. It installs nothing: a task's `environment` must already be on the host
 * (host-packages.ts checks, before anything runs).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { EnvironmentError, InputError, ProbeError } from '../errors.ts';
import type { LoadedTask } from '../schema/task.ts';
import { mountQuota, SANDBOX_PREFIX, sweepDeadQuotas, unmountQuota } from './disk-quota.ts';
import { EXCLUDE_ARTIFACTS } from './git-state.ts';
import { hostGit } from './host-git.ts';
import { checkoutGitBase } from './repo-checkout.ts';
import { checkNestedGit, taskGit, taskSetConfinement, type GitConfinement } from './task-git.ts';
import { requireHostPackages } from './host-packages.ts';
import { OutputCapture, STDERR_KEPT } from './output-capture.ts';
import { JailedSandbox, type RawResult, resetTreeScript, type RunOptions } from './through-jail.ts';
import {
  BASE_MOUNT,
  jailArgs,
  jailedShell,
  jailProblem,
  makeJailDir,
  newJailIdentity,
  type JailIdentity,
  type JailMounts,
} from './jail.ts';
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_OUTPUT_CAP, type SandboxOptions } from './types.ts';
import { onExit } from '../util/shutdown.ts';
import { boundedTimeout, keptDelay } from '../util/timeout.ts';
import { copyTree } from '../util/safe-tree.ts';

/** The editors' sources (the Docker sandbox copies them in). */
export { TOOLS_MOUNT, TOOLS_SOURCE as TOOLS_DIR } from './jail.ts';

/** Whether commands can be jailed here (tests skip the local sandbox otherwise). */
export function hasBubblewrap(): boolean {
  return jailProblem() === null;
}

const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'probe',
  GIT_AUTHOR_EMAIL: 'probe@localhost',
  GIT_AUTHOR_DATE: '2000-01-01T00:00:00Z',
  GIT_COMMITTER_NAME: 'probe',
  GIT_COMMITTER_EMAIL: 'probe@localhost',
  GIT_COMMITTER_DATE: '2000-01-01T00:00:00Z',
};

function git(cwd: string, args: string[]): string {
  return hostGit(args, { cwd, env: GIT_IDENTITY });
}

/**
 * A plain tree committed with a fixed identity and date: the same files always give the
 * same commit, so a task record can name it as its base_commit.
 */
export function commitTree(dir: string): string {
  git(dir, ['init', '-q', '--template=', '-b', 'main']);
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '--no-gpg-sign', '-m', 'base']);
  return git(dir, ['rev-parse', 'HEAD']);
}

/** One checked-out copy of each task's repository per process; sandboxes copy from it. */
const templates = new Map<string, string>();
onExit(() => {
  for (const dir of templates.values()) rmSync(dirname(dir), { recursive: true, force: true });
});

/** Where a task's repository and its git data may lie: the roots its repo_path was confined to (the repository alone for a task made in code). */
function repoConfinement(task: LoadedTask & { repoDir: string }): GitConfinement {
  return taskSetConfinement(task.repoRoots ?? [task.repoDir], { file: task.file });
}

/**
 * The base tree of a plain repo_path: regular files, directories and links (kept as links)
 * only, within the size caps, committed; a nested `.git` must lead inside the task set.
 */
function copyPlainTree(task: LoadedTask & { repoDir: string }, dir: string): void {
  const what = "the task's repository (repo_path)";
  checkNestedGit(task.repoDir, repoConfinement(task), what);
  mkdirSync(dir);
  copyTree(task.repoDir, dir, { links: 'keep', what });
  // A repository on a read-only mount copies read-only, and the jails' copies would keep that: an agent's `sed -i` could not
  // create its temporary file. Git records only the executable bit, so owner write changes no commit.
  spawnSync('chmod', ['-R', 'u+w', dir]);
  const head = commitTree(dir);
  if (head !== task.base_commit) {
    throw new InputError(
      { file: task.file, field: 'base_commit' },
      `is ${task.base_commit} but the tree at ${task.repoDir} commits to ${head}`,
    );
  }
}

/**
 * A checkout of the task's repository at its base commit (made once per process), readable
 * by any uid (the jails copy it as their own unprivileged user) and written by none of them.
 * A git repo_path is read through its object store only (repo-checkout.ts), its tree
 * measured before it is written; a plain one is copied through safe-tree.
 */
export function checkoutTemplate(task: LoadedTask): string {
  const key = `${task.file}#${task.instance_id}`;
  const cached = templates.get(key);
  if (cached) return cached;
  const repoDir = task.repoDir;
  if (!repoDir)
    throw new InputError(
      { file: task.file, field: 'repo_path' },
      'the local sandbox needs a repo_path (use --sandbox docker for image-only tasks)',
    );
  const parent = mkdtempSync(join(tmpdir(), 'probe-repo-'));
  const dir = join(parent, 'repo');
  try {
    const withRepo = { ...task, repoDir };
    const repoGit = taskGit(repoDir, repoConfinement(withRepo), { walk: true });
    if (repoGit) checkoutGitBase(withRepo, repoGit, dir);
    else copyPlainTree(withRepo, dir);
    git(dir, ['config', 'user.name', 'probe']);
    git(dir, ['config', 'user.email', 'probe@localhost']);
    // Repositories probe makes have no template: an empty hooks/ (as a clone has, less the samples) and info/.
    for (const sub of ['hooks', 'info']) mkdirSync(join(dir, '.git', sub), { recursive: true });
    spawnSync('bash', ['-c', EXCLUDE_ARTIFACTS], { cwd: dir });
  } catch (error) {
    rmSync(parent, { recursive: true, force: true });
    throw error;
  }
  chmodSync(parent, 0o755);
  spawnSync('chmod', ['-R', 'a+rX,go-w', dir]);
  templates.set(key, dir);
  return dir;
}

/** Rebuilds the tree from the base bound read-only at BASE_MOUNT; /dev/shm, a directory of the sandbox's, is emptied too. */
const RESET_TREE = resetTreeScript('chmod -R u+rwX /dev/shm 2>/dev/null; find /dev/shm -mindepth 1 -delete');

/** Kills a jail: its process group (bwrap's pid namespace dies with it, every process inside too). */
function killJail(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

export class LocalSandbox extends JailedSandbox {
  readonly provider = 'local';
  protected readonly reset = { script: RESET_TREE, timeoutMs: 120_000 };
  private closed = false;
  /** The jails of the commands running now, which close kills: none runs on, until its timeout, in a sandbox that is gone. */
  private readonly running = new Set<ChildProcess>();

  private constructor(
    readonly workdir: string,
    private readonly root: string,
    private readonly mounts: JailMounts,
    private readonly identity: JailIdentity,
    private readonly outputCap: number,
    protected readonly baseCommit: string,
    private readonly quotaMounted: boolean,
  ) {
    super();
  }

  static async create(task: LoadedTask, options: SandboxOptions = {}): Promise<LocalSandbox> {
    const problem = jailProblem();
    if (problem) throw new EnvironmentError(`${problem}; or use --sandbox docker`);
    requireHostPackages(task);
    sweepDeadQuotas();
    const base = checkoutTemplate(task);
    const root = mkdtempSync(join(tmpdir(), SANDBOX_PREFIX));
    chmodSync(root, 0o755);
    const quotaMounted = mountQuota(root);
    const identity = newJailIdentity();
    const mounts: JailMounts = { work: join(root, 'work'), workdir: task.workdir, tmp: join(root, 'tmp'), shm: join(root, 'shm'), base };
    makeJailDir(mounts.work, identity);
    makeJailDir(mounts.tmp, identity);
    makeJailDir(mounts.shm, identity);
    const sb = new LocalSandbox(
      task.workdir,
      root,
      mounts,
      identity,
      options.outputCap ?? DEFAULT_OUTPUT_CAP,
      task.base_commit,
      quotaMounted,
    );
    try {
      await sb.restore({ base_commit: task.base_commit, patch: '' });
    } catch (error) {
      await sb.close();
      throw error;
    }
    return sb;
  }

  /** Runs argv in the jail: stdout only, or stdout and stderr interleaved (`merge`). */
  protected run(command: string, options: RunOptions): Promise<RawResult> {
    if (this.closed) return Promise.reject(new ProbeError('sandbox is closed'));
    const cwd = options.cwd ?? this.workdir;
    const args = jailArgs(
      this.mounts,
      cwd,
      { PROBE_WORKDIR: this.workdir, PROBE_BASE_TREE: BASE_MOUNT, ...options.env },
      jailedShell(command, options.merge),
    );
    let timeoutMs: number;
    try {
      timeoutMs = keptDelay(options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS);
    } catch (error) {
      return Promise.reject(error);
    }
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn('bwrap', args, {
        cwd: this.root,
        detached: true,
        env: {},
        stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        ...(this.identity.hostUid !== undefined ? { uid: this.identity.hostUid, gid: this.identity.hostGid } : {}),
      });
      this.running.add(child);
      if (options.stdin !== undefined) {
        child.stdin!.on('error', () => {
          /* the command may exit without reading all of it */
        });
        child.stdin!.end(options.stdin);
      }
      const output = new OutputCapture(options.outputCap ?? this.outputCap);
      const errors = options.merge ? output : new OutputCapture(STDERR_KEPT);
      child.stdout!.on('data', (chunk: Buffer) => output.add(chunk));
      child.stderr!.on('data', (chunk: Buffer) => errors.add(chunk));
      let timedOut = false;
      const timer = boundedTimeout(() => {
        timedOut = true;
        killJail(child);
      }, timeoutMs);
      child.on('error', (error) => {
        clearTimeout(timer);
        this.running.delete(child);
        reject(new ProbeError(`cannot start bwrap: ${error.message}`, { cause: error }));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        this.running.delete(child);
        resolve({
          stdout: output.bytes(),
          stderr: options.merge ? '' : errors.bytes().toString('utf8'),
          exitCode: timedOut ? 124 : (code ?? (signal ? 128 + 9 : 1)),
          timedOut,
          truncated: output.truncated,
          durationMs: performance.now() - started,
        });
      });
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Waited for: the tree they may still be writing is removed next.
    await Promise.all(
      [...this.running].map(
        (child) =>
          new Promise((resolve) => {
            // One that has already ended is not waited for: its 'close' has been or will be emitted once.
            if (child.exitCode !== null || child.signalCode !== null) return resolve(undefined);
            child.once('close', resolve);
            killJail(child);
          }),
      ),
    );
    if (this.quotaMounted) unmountQuota(this.root);
    rmSync(this.root, { recursive: true, force: true });
  }
}
