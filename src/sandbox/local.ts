/**
 * The `local` sandbox: the task repository checked out at its workdir (`/testbed`)
 * inside a bubblewrap jail — system read-only, network, pid, ipc and uts namespaces
 * unshared, a private /tmp that lives as long as the sandbox. Timeouts kill the whole
 * process group; output is capped.
 *
 * Without bubblewrap, commands can run as plain subprocesses for *trusted* replays only
 * (`allowUnconfined`), with a loud warning; model-generated commands require the jail.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError, ProbeError } from '../errors.ts';
import type { EnvState, LoadedTask } from '../schema/task.ts';
import { EXCLUDE_ARTIFACTS, restoreState, treeDiff } from './git-state.ts';
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_OUTPUT_CAP, type ExecOptions, type ExecResult, type Sandbox, type SandboxOptions } from './types.ts';

/** Tools that run inside every sandbox (the editors), mounted at TOOLS_MOUNT. */
export const TOOLS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'tools');
export const TOOLS_MOUNT = '/opt/probe-tools';

let bwrapAvailable: boolean | undefined;
export function hasBubblewrap(): boolean {
  bwrapAvailable ??= spawnSync('bwrap', ['--ro-bind', '/', '/', 'true'], { stdio: 'ignore' }).status === 0;
  return bwrapAvailable;
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

/** A checkout of the task's repository at its base commit (made once per process). */
export function checkoutTemplate(task: LoadedTask): string {
  const key = `${task.file}#${task.instance_id}`;
  const cached = templates.get(key);
  if (cached) return cached;
  if (!task.repoDir) throw new InputError({ file: task.file, field: 'repo_path' }, 'the local sandbox needs a repo_path (use --sandbox docker for image-only tasks)');
  const dir = join(mkdtempSync(join(tmpdir(), 'probe-repo-')), 'repo');
  if (existsSync(join(task.repoDir, '.git'))) {
    git(dirname(dir), ['clone', '-q', '--no-local', task.repoDir, dir]);
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
  templates.set(key, dir);
  return dir;
}

let warnedUnconfined = false;

export class LocalSandbox implements Sandbox {
  readonly provider = 'local';
  private closed = false;

  private constructor(
    readonly workdir: string,
    private readonly hostWork: string,
    private readonly hostTmp: string,
    private readonly jailed: boolean,
    private readonly outputCap: number,
    private readonly baseCommit: string,
  ) {}

  static async create(task: LoadedTask, options: SandboxOptions = {}): Promise<LocalSandbox> {
    const jailed = hasBubblewrap();
    if (!jailed) {
      if (!options.allowUnconfined) {
        throw new ProbeError('bubblewrap (bwrap) is not available: commands cannot be confined. Install it (apt-get install bubblewrap) or use --sandbox docker.');
      }
      if (!warnedUnconfined) {
        warnedUnconfined = true;
        process.stderr.write('probe: WARNING: bubblewrap is missing; running a trusted replay as plain subprocesses, unconfined and with network access\n');
      }
    }
    const root = mkdtempSync(join(tmpdir(), 'probe-sandbox-'));
    const hostWork = join(root, 'work');
    const hostTmp = join(root, 'tmp');
    cpSync(checkoutTemplate(task), hostWork, { recursive: true });
    mkdirSync(hostTmp);
    return new LocalSandbox(task.workdir, hostWork, hostTmp, jailed, options.outputCap ?? DEFAULT_OUTPUT_CAP, task.base_commit);
  }

  /** Host path of a path inside the sandbox (the workdir and /tmp are the writable ones). */
  private hostPath(path: string): string {
    const abs = posix.isAbsolute(path) ? posix.normalize(path) : posix.join(this.workdir, path);
    for (const [inside, host] of [[this.workdir, this.hostWork], ['/tmp', this.hostTmp]] as const) {
      const rel = posix.relative(inside, abs);
      if (rel === '' || (!rel.startsWith('..') && !posix.isAbsolute(rel))) return join(host, rel);
    }
    throw new ProbeError(`${path} is outside the sandbox's writable directories (${this.workdir}, /tmp)`);
  }

  private command(command: string, cwd: string, env: Record<string, string>): { file: string; args: string[]; cwd: string } {
    // `exec 2>&1` merges stderr into stdout at the descriptor, so output interleaves as on a terminal.
    const shell = ['bash', '-c', 'exec 2>&1\neval "$1"', 'bash', command];
    const baseEnv = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1', TERM: 'dumb', ...env };
    if (!this.jailed) {
      return { file: shell[0]!, args: shell.slice(1), cwd: this.hostPath(cwd) };
    }
    const args = [
      '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/sbin', '/sbin',
      '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--ro-bind', '/etc', '/etc',
      '--bind', this.hostWork, this.workdir, '--bind', this.hostTmp, '/tmp', '--ro-bind', TOOLS_DIR, TOOLS_MOUNT,
      '--dev', '/dev', '--proc', '/proc', '--chdir', cwd,
      '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--new-session', '--clearenv',
      ...Object.entries(baseEnv).flatMap(([k, v]) => ['--setenv', k, v]),
      ...shell,
    ];
    return { file: 'bwrap', args, cwd: this.hostTmp };
  }

  exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.closed) return Promise.reject(new ProbeError('sandbox is closed'));
    const { file, args, cwd } = this.command(command, options.cwd ?? this.workdir, options.env ?? {});
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(file, args, {
        cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
        env: this.jailed ? {} : { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...options.env },
      });
      const chunks: Buffer[] = [];
      let kept = 0;
      let truncated = false;
      const collect = (chunk: Buffer) => {
        if (kept >= this.outputCap) { truncated = true; return; }
        const room = this.outputCap - kept;
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
        if (chunk.length > room) truncated = true;
        kept += Math.min(room, chunk.length);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* already gone */ }
      }, timeoutMs);
      child.on('error', (error) => { clearTimeout(timer); reject(new ProbeError(`cannot start ${file}: ${error.message}`, { cause: error })); });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({
          output: Buffer.concat(chunks).toString('utf8'),
          exitCode: timedOut ? 124 : code ?? (signal ? 128 + 9 : 1),
          timedOut, truncated, durationMs: performance.now() - started,
        });
      });
    });
  }

  async readFile(path: string): Promise<Buffer> {
    return readFileSync(this.hostPath(path));
  }

  async writeFile(path: string, data: Buffer | string): Promise<void> {
    const host = this.hostPath(path);
    mkdirSync(dirname(host), { recursive: true });
    writeFileSync(host, data);
  }

  diff(): Promise<string> {
    return treeDiff(this, this.baseCommit);
  }

  restore(state: EnvState): Promise<void> {
    return restoreState(this, state);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    rmSync(dirname(this.hostWork), { recursive: true, force: true });
  }
}
