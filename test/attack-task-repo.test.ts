/**
 * Issue 36: a hostile task set's repository.
 *
 * - Its `.git` leads to a host repository (a gitfile `gitdir: /host/repo/.git`, a link, a
 *   worktree's `commondir`, `objects/info/alternates`, a pack linked in from the host, a
 *   nested `.git` of a plain tree): probe cloned it into the sandbox, and the model read
 *   every branch. Each is refused in one line naming the task file and `repo_path`; inside
 *   the task set the same pointers are followed, and the sandbox gets only the base
 *   commit's history.
 * - Neither the host's git configuration (a filter driver) nor the task's own (an include
 *   of a FIFO, which hung the clone) is read when the repository is checked out.
 * - A git bomb: a few kilobytes of objects whose base tree checks out 4 GiB, or a billion
 *   files, was written to the host's disk; it is refused from its objects, before a byte
 *   is written.
 * - A record carrying the loader's own `repoDir` named any host directory as its repository.
 *
 * The caps are the real ones (TREE_LIMITS): a tree that references one 1 MiB blob 4,160
 * times, or a ten-level tree of ten, costs git a few kilobytes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { LocalSandbox } from '../src/sandbox/local.ts';
import { loadTaskFile, loadTasks } from '../src/verify/load-task.ts';
import { type CliRun, expectOneLineError, runProbe } from './helpers/cli.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';

const SWE_TASK = join(REPO_ROOT, 'verifiers', 'shop__pricing-1');
const SWE_TRAJECTORY = join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json');
const IDENTITY = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

/** A regex matching `text` literally. */
const literally = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));

/** git run by the test itself, on the test's own repositories (the host's config is not the point here). */
function git(dir: string, args: string[], input?: string | Buffer): string {
  return execFileSync('git', ['-C', dir, ...IDENTITY, ...args], { encoding: 'utf8', input }).trim();
}

/**
 * A repository of the shipped task's files (the base commit), with a later commit on a
 * `secret` branch that only a leak would show: { base, secret }.
 */
function repositoryWithSecret(dir: string): { base: string; secret: string } {
  cpSync(join(SWE_TASK, 'repo'), dir, { recursive: true });
  git(dir, ['init', '-q', '-b', 'main']);
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'base']);
  const base = git(dir, ['rev-parse', 'HEAD']);
  git(dir, ['checkout', '-q', '-b', 'secret']);
  writeFileSync(join(dir, 'secret.txt'), 'host secret\n');
  git(dir, ['add', 'secret.txt']);
  git(dir, ['commit', '-q', '-m', 'secret']);
  const secret = git(dir, ['rev-parse', 'HEAD']);
  git(dir, ['checkout', '-q', 'main']);
  return { base, secret };
}

/** A task set holding the shipped task, its record's base_commit `base`, its repo/ (the task's files, no .git) for the caller to finish. */
function taskSet(base: string, set = join(tempDir(), 'tasks')): { set: string; file: string; repo: string } {
  const taskDir = join(set, 'shop__pricing-1');
  mkdirSync(taskDir, { recursive: true });
  const record = JSON.parse(readFileSync(join(SWE_TASK, 'task.json'), 'utf8')) as Record<string, unknown>;
  const file = join(taskDir, 'task.json');
  writeFileSync(file, JSON.stringify({ ...record, base_commit: base }));
  const repo = join(taskDir, 'repo');
  cpSync(join(SWE_TASK, 'repo'), repo, { recursive: true });
  return { set, file, repo };
}

/**
 * `probe replay` of the shipped trajectory on the task: the task is loaded, then its sandbox
 * made. Killed with SIGKILL at the timeout: a probe blocked in a hung git never runs its
 * SIGTERM handler.
 */
function replay(file: string, env: Record<string, string> = {}, timeoutMs = 120_000): CliRun {
  const run = spawnSync(process.execPath, [PROBE_BIN, 'replay', SWE_TRAJECTORY, '--task', file, '--json'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    env: { ...process.env, ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const outsideMessage = (file: string, what: string, target: string) =>
  literally(`${file}: field "repo_path": ${what} leads to ${target}, outside the task set's directory`);

describe('a task repository whose .git leads out of the task set', () => {
  it('a gitfile naming a host repository is refused at load, naming the task file and repo_path', () => {
    const host = join(tempDir(), 'private');
    const { base } = repositoryWithSecret(host);
    const { file, repo } = taskSet(base);
    writeFileSync(join(repo, '.git'), `gitdir: ${join(host, '.git')}\n`);
    expectOneLineError(replay(file), outsideMessage(file, `the repository's .git (${repo}/.git), a gitfile,`, join(host, '.git')));
    // A relative gitdir leading out by ../ is the same.
    writeFileSync(join(repo, '.git'), `gitdir: ${relative(repo, join(host, '.git'))}\n`);
    expectOneLineError(replay(file), outsideMessage(file, `the repository's .git (${repo}/.git), a gitfile,`, join(host, '.git')));
  });

  it('a .git that is a link to a host repository is refused', () => {
    const host = join(tempDir(), 'private');
    const { base } = repositoryWithSecret(host);
    const { file, repo } = taskSet(base);
    symlinkSync(join(host, '.git'), join(repo, '.git'));
    expectOneLineError(replay(file), outsideMessage(file, `the repository's .git (${repo}/.git), a symbolic link,`, join(host, '.git')));
  });

  it("a worktree's commondir and borrowed objects (alternates) leading to a host repository are refused", () => {
    const host = join(tempDir(), 'private');
    const { base } = repositoryWithSecret(host);
    // A worktree of the host repository whose git directory was moved into the set: its commondir still names the host's.
    const worktree = taskSet(base);
    rmSync(worktree.repo, { recursive: true });
    git(host, ['worktree', 'add', '-q', '--detach', worktree.repo, base]);
    const gitDir = join(worktree.file, '..', 'worktree-git');
    renameSync(join(host, '.git', 'worktrees', 'repo'), gitDir);
    writeFileSync(join(worktree.repo, '.git'), 'gitdir: ../worktree-git\n');
    writeFileSync(join(gitDir, 'commondir'), `${join(host, '.git')}\n`);
    expectOneLineError(replay(worktree.file), outsideMessage(worktree.file, `${gitDir}/commondir`, join(host, '.git')));

    // `git clone --shared`: the task's .git holds no objects of its own and borrows the host's.
    const shared = taskSet(base);
    rmSync(shared.repo, { recursive: true });
    execFileSync('git', ['clone', '-q', '--shared', host, shared.repo]);
    const alternates = join(shared.repo, '.git', 'objects', 'info', 'alternates');
    expect(readFileSync(alternates, 'utf8').trim()).toBe(join(host, '.git', 'objects'));
    expectOneLineError(
      replay(shared.file),
      outsideMessage(shared.file, `${alternates} (${join(host, '.git', 'objects')})`, join(host, '.git', 'objects')),
    );
  });

  it.skipIf(skipWithoutBwrap)('packs linked in from a host repository are refused when the repository is checked out', async () => {
    const host = join(tempDir(), 'private');
    const { base } = repositoryWithSecret(host);
    git(host, ['gc', '-q']);
    const { file, repo } = taskSet(base);
    git(repo, ['init', '-q', '-b', 'master']);
    const packs = join(repo, '.git', 'objects', 'pack');
    const hostPacks = join(host, '.git', 'objects', 'pack');
    const linked = readdirSync(hostPacks)
      .filter((n) => /\.(pack|idx)$/.test(n))
      .sort();
    expect(linked.length).toBeGreaterThanOrEqual(2);
    for (const name of linked) symlinkSync(join(hostPacks, name), join(packs, name));
    // A branch at the base commit, whose objects are only in the host's packs: the clone took them through the links.
    writeFileSync(join(repo, '.git', 'refs', 'heads', 'master'), `${base}\n`);
    const [task] = await loadTaskFile(file); // the pointers lead inside: the load takes it
    await expect(LocalSandbox.create(task!)).rejects.toThrow(
      literally(`${file}: field "repo_path": ${join(packs, linked[0]!)}: is a symbolic link to ${join(hostPacks, linked[0]!)}, outside`),
    );
  });

  it.skipIf(skipWithoutBwrap)('a nested .git of a plain tree leading to a host repository is refused', async () => {
    const host = join(tempDir(), 'private');
    repositoryWithSecret(host);
    const plain = JSON.parse(readFileSync(join(SWE_TASK, 'task.json'), 'utf8')) as { base_commit: string };
    const { file, repo } = taskSet(plain.base_commit);
    writeFileSync(join(repo, 'cart', '.git'), `gitdir: ${join(host, '.git')}\n`);
    const [task] = await loadTaskFile(file);
    await expect(LocalSandbox.create(task!)).rejects.toThrow(
      literally(
        `${file}: field "repo_path": the repository's .git (${join(repo, 'cart')}/.git), a gitfile, leads to ${join(host, '.git')}, outside`,
      ),
    );
  });

  it('probe task refuses a task source directory whose repo/.git leads out of it', () => {
    const host = join(tempDir(), 'private');
    repositoryWithSecret(host);
    const dir = join(tempDir(), 'my-task');
    cpSync(join(SWE_TASK, 'repo'), join(dir, 'repo'), { recursive: true });
    writeFileSync(join(dir, 'repo', '.git'), `gitdir: ${join(host, '.git')}\n`);
    expectOneLineError(
      runProbe(['task', dir, '--no-check', '--problem', 'p', '--test-cmd', 'true', '--fail', 'x']),
      literally(
        `${dir}/repo/.git: the repository's .git (${dir}/repo/.git), a gitfile, leads to ${join(host, '.git')}, outside the task source directory`,
      ),
    );
    expect(existsSync(join(dir, 'task.json'))).toBe(false);
  });

  it("a record's own repoDir (the loader's field) names nothing", async () => {
    const host = join(tempDir(), 'private');
    const { base } = repositoryWithSecret(host);
    const { file } = taskSet(base);
    const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    delete record.repo_path;
    writeFileSync(file, JSON.stringify({ ...record, image: 'probe-none:latest', repoDir: host, repoRoots: ['/'] }));
    const [task] = await loadTaskFile(file);
    expect(task!.repoDir).toBeUndefined();
    expect(task!.repoRoots).toBeUndefined();
  });
});

describe.skipIf(skipWithoutBwrap)('a task repository whose git data lies inside the task set', () => {
  it('is followed (a gitfile to a shared repository of the set), and the sandbox holds only the base commit and its history', async () => {
    const set = join(tempDir(), 'tasks');
    const { base, secret } = repositoryWithSecret(join(set, 'repos', 'shop'));
    const { repo } = taskSet(base, set);
    writeFileSync(join(repo, '.git'), 'gitdir: ../../repos/shop/.git\n');
    const [task] = await loadTasks(set);
    const sb = await LocalSandbox.create(task!);
    try {
      const r = await sb.exec(
        `git rev-parse HEAD; git branch -a --format='%(refname)'; git log --all --format=%H | wc -l; git cat-file -e ${secret} 2>/dev/null && echo leaked || echo no-secret; ls`,
      );
      expect(r.output).toBe(`${base}\nrefs/heads/main\n1\nno-secret\ncart\ntests\n`);
      expect(await sb.diff()).toBe('');
    } finally {
      await sb.close();
    }
  });

  it("reads neither the host's git configuration (a filter driver) nor the task's own (an include of a FIFO hung the clone)", () => {
    const host = tempDir();
    const marker = join(host, 'filter-ran');
    const globalConfig = join(host, 'gitconfig');
    writeFileSync(globalConfig, `[filter "probe-attack"]\n\tsmudge = sh -c 'touch ${marker}; cat'\n\tclean = cat\n`);
    const fifo = join(host, 'config-fifo');
    execFileSync('mkfifo', [fifo]);
    const { file, repo } = taskSet('0'.repeat(40));
    writeFileSync(join(repo, '.gitattributes'), '* filter=probe-attack\n');
    git(repo, ['init', '-q', '-b', 'main']);
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-q', '-m', 'base']);
    const base = git(repo, ['rev-parse', 'HEAD']);
    writeFileSync(file, readFileSync(file, 'utf8').replace('0'.repeat(40), base));
    writeFileSync(join(repo, '.git', 'config'), `${readFileSync(join(repo, '.git', 'config'), 'utf8')}[include]\n\tpath = ${fifo}\n`);
    const run = replay(file, { GIT_CONFIG_GLOBAL: globalConfig }, 90_000);
    // Whatever still waits on the FIFO (a git of the task's config) is let go: a writer opens it and leaves at once.
    spawnSync('sh', ['-c', `exec 3>'${fifo}'`], { timeout: 2_000 });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).rejected).toBeNull();
    expect(existsSync(marker)).toBe(false);
  });
});

/** Writes `data` as a blob of `dir`'s repository; its id. */
const blob = (dir: string, data: Buffer) => git(dir, ['hash-object', '-w', '--stdin'], data);
/** A tree of `count` entries all naming `id` (a blob or a tree); its id. */
function fanOut(dir: string, id: string, kind: 'blob' | 'tree', count: number): string {
  const mode = kind === 'blob' ? '100644' : '040000';
  const lines = Array.from({ length: count }, (_, i) => `${mode} ${kind} ${id}\t${kind === 'blob' ? 'f' : 'd'}${i}\n`).join('');
  return git(dir, ['mktree'], lines);
}

/** A task set whose repo/ is a git repository holding only `tree` (built by `build` from its blobs) as its base commit. */
function bombSet(build: (repo: string) => string): { file: string; tmp: string } {
  const { file, repo } = taskSet('0'.repeat(40));
  rmSync(repo, { recursive: true });
  mkdirSync(repo);
  git(repo, ['init', '-q', '-b', 'main']);
  const tree = build(repo);
  const base = git(repo, ['commit-tree', tree, '-m', 'bomb']);
  git(repo, ['update-ref', 'refs/heads/main', base]);
  writeFileSync(file, readFileSync(file, 'utf8').replace('0'.repeat(40), base));
  const tmp = tempDir('probe-bomb-tmp-');
  chmodSync(tmp, 0o755); // the jails (other uids) read what probe puts there
  return { file, tmp };
}

/** Bytes under `dir` (du), to see what a checkout wrote. */
const diskUse = (dir: string) => Number(spawnSync('du', ['-sb', dir], { encoding: 'utf8' }).stdout.split('\t')[0]);

describe('a git bomb in a task repository', () => {
  it('a base tree of 4.06 GiB from a few kilobytes of objects is refused before anything is written, naming the task and the size', () => {
    const { file, tmp } = bombSet((repo) => {
      const mib = blob(repo, Buffer.alloc(2 ** 20));
      return fanOut(repo, fanOut(repo, mib, 'blob', 65), 'tree', 64);
    });
    expect(diskUse(join(file, '..', 'repo', '.git'))).toBeLessThan(1_000_000);
    // TMPDIR: where the checkout would be written.
    const run = replay(file, { TMPDIR: tmp }, 300_000);
    expectOneLineError(
      run,
      literally(
        `${file}: field "repo_path": task shop__pricing-1: base commit ${readFileSync(file, 'utf8').match(/"base_commit":"([0-9a-f]{12})/)![1]} checks out 4.06 GiB, over the 4.00 GiB cap on a tree`,
      ),
    );
    expect(readdirSync(tmp).filter((n) => n.startsWith('probe-repo-'))).toEqual([]);
    expect(diskUse(tmp)).toBeLessThan(10_000_000);
  });

  it('a base tree of a billion files (ten levels of ten) is refused from the first 200,000, in seconds', () => {
    const { file, tmp } = bombSet((repo) => {
      let id = fanOut(repo, blob(repo, Buffer.alloc(0)), 'blob', 10);
      for (let level = 1; level < 9; level++) id = fanOut(repo, id, 'tree', 10);
      return id;
    });
    const started = Date.now();
    const run = replay(file, { TMPDIR: tmp }, 120_000);
    expectOneLineError(
      run,
      /field "repo_path": task shop__pricing-1: base commit [0-9a-f]{12} holds more than 200000 files, directories and links/,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(readdirSync(tmp).filter((n) => n.startsWith('probe-repo-'))).toEqual([]);
  });
});
