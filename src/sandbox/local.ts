/**
 * The `local` sandbox: the task repository at its workdir (`/testbed`) inside a bubblewrap
 * jail (jail.ts: an unprivileged user, no capabilities, no network), with a /tmp (also the
 * home) of its own. The sandbox's directory is root-owned and the jail writes only inside
 * `work/` and `tmp/`; every file going in or out passes through a jailed command, so the
 * host never opens a path the model could have turned into a link. `restore` rebuilds the
 * tree from a read-only copy of the base inside the jail, `.git` and /tmp included: nothing
 * a command left behind survives. No process outlives its command (pid namespace). Timeouts
 * kill the whole process group; output is capped.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { InputError, ProbeError } from '../errors.ts';
import type { EnvState, LoadedTask } from '../schema/task.ts';
import { mountQuota, SANDBOX_PREFIX, sweepDeadQuotas, unmountQuota } from './disk-quota.ts';
import { applyStatePatch, EXCLUDE_ARTIFACTS, treeDiff } from './git-state.ts';
import { BASE_MOUNT, jailArgs, jailedShell, jailProblem, makeJailDir, newJailIdentity, type JailIdentity, type JailMounts } from './jail.ts';
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_OUTPUT_CAP, FILE_OUTPUT_CAP, type ExecOptions, type ExecResult, type Sandbox, type SandboxOptions } from './types.ts';

/** The editors' sources (the Docker sandbox copies them in). */
export { TOOLS_MOUNT, TOOLS_SOURCE as TOOLS_DIR } from './jail.ts';

/** Whether commands can be jailed here (tests skip the local sandbox otherwise). */
export function hasBubblewrap(): boolean {
  return jailProblem() === null;
}

const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'probe', GIT_AUTHOR_EMAIL: 'probe@localhost', GIT_AUTHOR_DATE: '2000-01-01T00:00:00Z',
  GIT_COMMITTER_NAME: 'probe', GIT_COMMITTER_EMAIL: 'probe@localhost', GIT_COMMITTER_DATE: '2000-01-01T00:00:00Z',
};

function git(cwd: string, args: string[]): string {
  const run = spawnSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...GIT_IDENTITY } });
  if (run.status !== 0) throw new ProbeError(`git ${args.join(' ')} failed in ${cwd}: ${run.stderr}`);
  return run.stdout.trim();
}

/**
 * A plain tree committed with a fixed identity and date: the same files always give the
 * same commit, so a task record can name it as its base_commit.
 */
export function commitTree(dir: string): string {
  git(dir, ['init', '-q', '-b', 'main']);
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '--no-gpg-sign', '-m', 'base']);
  return git(dir, ['rev-parse', 'HEAD']);
}

/** One checked-out copy of each task's repository per process; sandboxes copy from it. */
const templates = new Map<string, string>();
process.once('exit', () => {
  for (const dir of templates.values()) rmSync(dirname(dir), { recursive: true, force: true });
});

/**
 * A checkout of the task's repository at its base commit (made once per process), readable
 * by any uid (the jails copy it as their own unprivileged user) and written by none of them.
 */
export function checkoutTemplate(task: LoadedTask): string {
  const key = `${task.file}#${task.instance_id}`;
  const cached = templates.get(key);
  if (cached) return cached;
  if (!task.repoDir) throw new InputError({ file: task.file, field: 'repo_path' }, 'the local sandbox needs a repo_path (use --sandbox docker for image-only tasks)');
  const parent = mkdtempSync(join(tmpdir(), 'probe-repo-'));
  const dir = join(parent, 'repo');
  if (existsSync(join(task.repoDir, '.git'))) {
    git(parent, ['clone', '-q', '--no-local', task.repoDir, dir]);
    git(dir, ['checkout', '-q', task.base_commit]);
  } else {
    cpSync(task.repoDir, dir, { recursive: true });
    const head = commitTree(dir);
    if (head !== task.base_commit) {
      throw new InputError({ file: task.file, field: 'base_commit' }, `is ${task.base_commit} but the tree at ${task.repoDir} commits to ${head}`);
    }
  }
  git(dir, ['config', 'user.name', 'probe']);
  git(dir, ['config', 'user.email', 'probe@localhost']);
  spawnSync('bash', ['-c', EXCLUDE_ARTIFACTS], { cwd: dir });
  chmodSync(parent, 0o755);
  spawnSync('chmod', ['-R', 'a+rX,go-w', dir]);
  templates.set(key, dir);
  return dir;
}

/** Empties the workdir and /tmp, then copies the base tree in, as the jail user. */
const RESET_TREE = [
  'chmod -R u+rwX "$PROBE_WORKDIR" /tmp 2>/dev/null',
  'find "$PROBE_WORKDIR" /tmp -mindepth 1 -delete',
  `cp -a --no-preserve=ownership ${BASE_MOUNT}/. "$PROBE_WORKDIR"/`,
].join('; ');

interface RawResult { stdout: Buffer; exitCode: number; timedOut: boolean; truncated: boolean; durationMs: number }

export class LocalSandbox implements Sandbox {
  readonly provider = 'local';
  private closed = false;

  private constructor(
    readonly workdir: string,
    private readonly root: string,
    private readonly mounts: JailMounts,
    private readonly identity: JailIdentity,
    private readonly outputCap: number,
    private readonly baseCommit: string,
    private readonly quotaMounted: boolean,
  ) {}

  static async create(task: LoadedTask, options: SandboxOptions = {}): Promise<LocalSandbox> {
    const problem = jailProblem();
    if (problem) throw new ProbeError(`${problem}; or use --sandbox docker`);
    sweepDeadQuotas();
    const base = checkoutTemplate(task);
    const root = mkdtempSync(join(tmpdir(), SANDBOX_PREFIX));
    chmodSync(root, 0o755);
    const quotaMounted = mountQuota(root);
    const identity = newJailIdentity();
    const mounts: JailMounts = { work: join(root, 'work'), workdir: task.workdir, tmp: join(root, 'tmp'), base };
    makeJailDir(mounts.work, identity);
    makeJailDir(mounts.tmp, identity);
    const sb = new LocalSandbox(task.workdir, root, mounts, identity, options.outputCap ?? DEFAULT_OUTPUT_CAP, task.base_commit, quotaMounted);
    try {
      await sb.restore({ base_commit: task.base_commit, patch: '' });
    } catch (error) {
      await sb.close();
      throw error;
    }
    return sb;
  }

  /** Runs argv in the jail: stdout only, or stdout and stderr interleaved (`merge`). */
  private run(command: string, options: ExecOptions & { merge: boolean }): Promise<RawResult> {
    if (this.closed) return Promise.reject(new ProbeError('sandbox is closed'));
    const cwd = options.cwd ?? this.workdir;
    const args = jailArgs(this.mounts, cwd, { PROBE_WORKDIR: this.workdir, ...options.env }, jailedShell(command, options.merge));
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    const cap = options.outputCap ?? this.outputCap;
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn('bwrap', args, {
        cwd: this.root, detached: true, env: {},
        stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', options.merge ? 'pipe' : 'ignore'],
        ...(this.identity.hostUid !== undefined ? { uid: this.identity.hostUid, gid: this.identity.hostGid } : {}),
      });
      if (options.stdin !== undefined) {
        child.stdin!.on('error', () => { /* the command may exit without reading all of it */ });
        child.stdin!.end(options.stdin);
      }
      const chunks: Buffer[] = [];
      let kept = 0;
      let truncated = false;
      const collect = (chunk: Buffer) => {
        if (kept >= cap) { truncated = true; return; }
        const room = cap - kept;
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
        if (chunk.length > room) truncated = true;
        kept += Math.min(room, chunk.length);
      };
      child.stdout!.on('data', collect);
      child.stderr?.on('data', collect);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
      }, timeoutMs);
      child.on('error', (error) => { clearTimeout(timer); reject(new ProbeError(`cannot start bwrap: ${error.message}`, { cause: error })); });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ stdout: Buffer.concat(chunks), exitCode: timedOut ? 124 : code ?? (signal ? 128 + 9 : 1), timedOut, truncated, durationMs: performance.now() - started });
      });
    });
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const r = await this.run(command, { ...options, merge: true });
    return { output: r.stdout.toString('utf8'), exitCode: r.exitCode, timedOut: r.timedOut, truncated: r.truncated, durationMs: r.durationMs };
  }

  async readFile(path: string): Promise<Buffer> {
    const r = await this.run('cat -- "$PROBE_PATH"', { env: { PROBE_PATH: path }, merge: false, outputCap: FILE_OUTPUT_CAP, timeoutMs: 60_000 });
    if (r.exitCode !== 0) throw new ProbeError(`cannot read ${path} in the local sandbox (exit ${r.exitCode})`);
    if (r.truncated) throw new ProbeError(`${path} in the local sandbox is larger than ${FILE_OUTPUT_CAP / 2 ** 20} MiB`);
    return r.stdout;
  }

  async writeFile(path: string, data: Buffer | string): Promise<void> {
    const r = await this.exec('mkdir -p -- "$(dirname -- "$PROBE_PATH")" && cat > "$PROBE_PATH"', { env: { PROBE_PATH: path }, stdin: data, timeoutMs: 60_000 });
    if (r.exitCode !== 0) throw new ProbeError(`cannot write ${path} in the local sandbox: ${r.output.trim().slice(0, 300)}`);
  }

  diff(): Promise<string> {
    return treeDiff(this, this.baseCommit);
  }

  async restore(state: EnvState): Promise<void> {
    if (state.base_commit !== this.baseCommit) throw new ProbeError(`state is at ${state.base_commit}, this sandbox's task at ${this.baseCommit}`);
    const reset = await this.exec(RESET_TREE, { cwd: '/', timeoutMs: 120_000 });
    if (reset.exitCode !== 0) throw new ProbeError(`cannot reset the sandbox to ${state.base_commit}: ${reset.output.slice(0, 500)}`);
    await applyStatePatch(this, state.patch);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.quotaMounted) unmountQuota(this.root);
    rmSync(this.root, { recursive: true, force: true });
  }
}
