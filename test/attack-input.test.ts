/**
 * Issue 26, classes 4, 5, 6 and 9: hostile task sets and run directories.
 *
 * - 4: special files in a Terminal-Bench task directory (a link to /dev/zero, a FIFO, a
 *   3 GiB sparse file, a link out of the task) read by the loader, the image hash, the
 *   build-context copy or the tests upload: each an exit-2 line naming the path, at load.
 * - 5: a task record's repo_path leading out of its task set (by `../`, by a link), and a
 *   base_commit that is a name (HEAD) or a short id.
 * - 6: a run directory whose transcript is a link to a host file (or a FIFO, or lies in a
 *   linked directory): the report leaves it out and says so.
 * - 9: timeouts beyond Node's timer range (a task's `timeout_sec = 3000000`,
 *   `test_timeout_s: 3e6`, a flag), which fired after 1 ms and graded a fix unsolved.
 *
 * Each case runs the real `probe` bin on real files where that is cheap.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointKey } from '../src/swe/store.ts';
import { EMBEDDED_TERMINAL_TASKS, REPO_ROOT } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { treeHash } from '../src/terminal/image.ts';
import { loadTerminalTask } from '../src/terminal/task.ts';
import { idFileName } from '../src/util/file-name.ts';
import { boundedTimeout, MAX_TIMEOUT_S } from '../src/util/timeout.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { CKPT, tempDir } from './helpers/paths.ts';

const TERMINAL_TASKS = EMBEDDED_TERMINAL_TASKS;
const SWE_TASK = join(REPO_ROOT, 'verifiers', 'shop__pricing-1');
const SWE_TRAJECTORY = join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json');

/** A task set holding one writable copy of a shipped Terminal-Bench task. */
function terminalSet(id = 'log-error-report'): { set: string; task: string } {
  const set = join(tempDir(), 'set');
  const task = join(set, id);
  cpSync(join(TERMINAL_TASKS, id), task, { recursive: true });
  return { set, task };
}

/**
 * `probe asap --env terminal` on a task set: the tasks are loaded before anything runs.
 * On code that accepted the set, the run would go on to build and grade (or hang on a
 * FIFO): the time limit makes that a failure rather than a wait.
 */
function asapTerminal(set: string, extra: string[] = []) {
  return runProbe(['asap', '--env', 'terminal', '--terminal-tasks', set, '--ckpt', CKPT.agent, '--runs', '1', ...extra], {}, 60_000);
}

/** A regex matching `text` literally. */
const literally = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));

describe('class 4: special files in a Terminal-Bench task directory', () => {
  it('a link to /dev/zero in environment/ is refused at load, naming it (the tree hash read it until 16 GB)', () => {
    const { set, task } = terminalSet();
    symlinkSync('/dev/zero', join(task, 'environment', 'zero'));
    const run = asapTerminal(set);
    expectOneLineError(run, literally(`${join(task, 'environment', 'zero')}: is a symbolic link to /dev/zero, outside`));
    // The hash refuses it too, whoever calls it.
    expect(() => treeHash(join(task, 'environment'))).toThrow(InputError);
  });

  it('a FIFO in environment/ is refused at load (the hash waited on it forever)', () => {
    const { set, task } = terminalSet();
    execFileSync('mkfifo', [join(task, 'environment', 'pipe')]);
    expectOneLineError(asapTerminal(set), literally(`${join(task, 'environment', 'pipe')}: is a FIFO`));
  });

  it('a FIFO as instruction.md, a device as solve.sh and a FIFO in tests/ are refused, naming each', () => {
    const fifo = terminalSet();
    rmSync(join(fifo.task, 'instruction.md'));
    execFileSync('mkfifo', [join(fifo.task, 'instruction.md')]);
    expectOneLineError(asapTerminal(fifo.set), literally(`${join(fifo.task, 'instruction.md')}: is a FIFO`));

    const device = terminalSet();
    rmSync(join(device.task, 'solution', 'solve.sh'));
    symlinkSync('/dev/zero', join(device.task, 'solution', 'solve.sh'));
    expect(() => loadTerminalTask(device.task)).toThrow(/solve\.sh: is a symbolic link to \/dev\/zero, outside/);

    const tests = terminalSet();
    execFileSync('mkfifo', [join(tests.task, 'tests', 'pipe')]);
    expect(() => loadTerminalTask(tests.task)).toThrow(literally(`${join(tests.task, 'tests', 'pipe')}: is a FIFO`));
  });

  it('a 3 GiB sparse file is refused by its size before it is read (it ended in ERR_FS_FILE_TOO_LARGE, "a bug in probe")', () => {
    const { set, task } = terminalSet();
    const big = join(task, 'environment', 'sparse.bin');
    writeFileSync(big, '');
    truncateSync(big, 3 * 1024 ** 3);
    expectOneLineError(asapTerminal(set), literally(`${big}: is 3.0 GiB, over the 1.0 GiB cap on one file of the task directory`));
  });

  it('a link out of the task (to a host file) is refused; a link inside environment/ is kept, as a link', () => {
    const { set, task } = terminalSet();
    const secret = join(tempDir(), 'host-secret.txt');
    writeFileSync(secret, 'host secret\n');
    symlinkSync(secret, join(task, 'environment', 'leak.txt'));
    expectOneLineError(asapTerminal(set), literally(`${join(task, 'environment', 'leak.txt')}: is a symbolic link to ${secret}, outside`));

    // A task directory linked into the set from outside it is refused the same way.
    const outside = terminalSet();
    const linkedSet = join(tempDir(), 'linked-set');
    mkdirSync(linkedSet);
    symlinkSync(outside.task, join(linkedSet, 'borrowed'));
    expectOneLineError(asapTerminal(linkedSet), /borrowed: is a symbolic link to .*, outside the task set's directory/);

    const inside = terminalSet();
    const env = join(inside.task, 'environment');
    symlinkSync('Dockerfile', join(env, 'Dockerfile.link'));
    const before = treeHash(env);
    expect(loadTerminalTask(inside.task).dockerfile).toBe(join(env, 'Dockerfile'));
    rmSync(join(env, 'Dockerfile.link'));
    expect(treeHash(env)).not.toBe(before); // the link is part of the context's identity
  });
});

/** A writable copy of a shipped SWE task in a fresh task set (`set/<id>/task.json` and its repo/), the record edited. */
function sweSet(edit: (record: Record<string, unknown>, taskDir: string) => Record<string, unknown>): { set: string; file: string } {
  const set = join(tempDir(), 'tasks');
  const taskDir = join(set, 'shop__pricing-1');
  cpSync(SWE_TASK, taskDir, { recursive: true });
  const file = join(taskDir, 'task.json');
  const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  writeFileSync(file, JSON.stringify(edit(record, taskDir)));
  return { set, file };
}

/** Makes `dir` a git repository with its tree as one commit; that commit's id. */
function gitRepo(dir: string): string {
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
  git('init', '-q');
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'base');
  return git('rev-parse', 'HEAD');
}

/** `probe replay` on the task: the task file is read before anything runs. */
const replay = (file: string) => runProbe(['replay', SWE_TRAJECTORY, '--task', file], {}, 60_000);

describe('class 5: a task record reaches only its own task set', () => {
  it('a repo_path leading out by ../ is refused, naming the file and field; PROBE_REPO_ROOTS allows a directory the user trusts', async () => {
    const host = join(tempDir(), 'private');
    cpSync(join(SWE_TASK, 'repo'), host, { recursive: true });
    const { file } = sweSet((record, taskDir) => ({ ...record, repo_path: relative(taskDir, host) }));
    const record = JSON.parse(readFileSync(file, 'utf8')) as { repo_path: string };
    expect(record.repo_path.startsWith('../')).toBe(true);
    expectOneLineError(
      replay(file),
      literally(`${file}: field "repo_path": "${record.repo_path}" resolves to ${host}, outside the task set's directory`),
    );
    // Named by the user, the same directory is allowed.
    await expect(loadTaskFile(file, { repoRoots: [host] })).resolves.toMatchObject([{ repoDir: host }]);
  });

  it('a repo_path through a link out of the set is refused; a link inside the set is followed', async () => {
    const host = join(tempDir(), 'private');
    cpSync(join(SWE_TASK, 'repo'), host, { recursive: true });
    const { file } = sweSet((record, taskDir) => {
      rmSync(join(taskDir, 'repo'), { recursive: true });
      symlinkSync(host, join(taskDir, 'repo'));
      return record;
    });
    expectOneLineError(replay(file), literally(`${file}: field "repo_path": "repo" resolves to ${host}, outside the task set's directory`));

    const inside = sweSet((record, taskDir) => {
      cpSync(join(taskDir, 'repo'), join(taskDir, 'real-repo'), { recursive: true });
      rmSync(join(taskDir, 'repo'), { recursive: true });
      symlinkSync('real-repo', join(taskDir, 'repo'));
      return record;
    });
    const [task] = await loadTaskFile(inside.file);
    expect(task!.repoDir).toBe(join(inside.file, '..', 'real-repo'));
  });

  it('a directory of tasks may share a repository anywhere inside it (--tasks DIR is the task set)', async () => {
    const { set, file } = sweSet((record) => ({ ...record, repo_path: '../shared-repo' }));
    cpSync(join(SWE_TASK, 'repo'), join(set, 'shared-repo'), { recursive: true });
    const { loadTasks } = await import('../src/verify/load-task.ts');
    expect((await loadTasks(set))[0]!.repoDir).toBe(join(set, 'shared-repo'));
    // The file alone is its own set: its directory, not the one above.
    await expect(loadTaskFile(file)).rejects.toThrow(/field "repo_path": .* outside the task set's directory/);
  });

  it('base_commit HEAD, a branch name or a short id is refused, naming the file and field (a git repo_path checked any of them out)', () => {
    let commit = '';
    const named = (base: (c: string) => string) =>
      sweSet((record, taskDir) => {
        commit = gitRepo(join(taskDir, 'repo'));
        return { ...record, base_commit: base(commit) };
      }).file;
    for (const base of [() => 'HEAD', () => 'master', (c: string) => c.slice(0, 7)]) {
      const file = named(base);
      expectOneLineError(replay(file), literally(`${file}: field "base_commit": must be a full commit id`));
    }
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
  });
});

/** One real `probe asap` run (one episode of the embedded agent checkpoint, one step), made once. */
let asapRun: { dir: string; transcript: string } | undefined;
function realAsapRun(): { dir: string; transcript: string } {
  if (asapRun) return asapRun;
  const dir = join(tempDir(), 'asap-run');
  const args = ['asap', '--ckpt', CKPT.agent, '--tasks', join(REPO_ROOT, 'verifiers'), '--instances', 'shop__pricing-1'];
  const run = runProbe([...args, '--runs', '1', '--max-steps', '1', '--out', dir], {}, 300_000);
  expect(run.code, run.stderr).toBe(0);
  const transcript = join('episodes', checkpointKey(CKPT.agent), idFileName('shop__pricing-1'), 'run-0.md');
  expect(readFileSync(join(dir, transcript), 'utf8')).toContain('shop__pricing-1');
  asapRun = { dir, transcript };
  return asapRun;
}

/** A copy of the real run directory whose one transcript `plant` replaces. */
function asapRunDir(plant: (transcript: string) => void): string {
  const { dir: original, transcript: rel } = realAsapRun();
  const dir = join(tempDir(), 'run');
  cpSync(original, dir, { recursive: true });
  const transcript = join(dir, rel);
  rmSync(transcript);
  plant(transcript);
  return dir;
}

function report(dir: string): { code: number | null; html: string; stderr: string } {
  const out = join(tempDir(), 'report.html');
  const run = runProbe(['report', dir, '--html', out], {}, 60_000);
  let html = '';
  try {
    html = readFileSync(out, 'utf8');
  } catch {
    /* no report written */
  }
  return { code: run.code, html, stderr: run.stderr };
}

// The run directory is a real `probe asap` run, which needs the local jail.
describe.skipIf(skipWithoutBwrap)('class 6: probe report reads only regular files inside the run directory', () => {
  const SECRET = 'HOST-SECRET-8c1f2e: never in a report';

  it('a transcript that is a link to a host file is left out, and the report says so', () => {
    const secret = join(tempDir(), 'secret.txt');
    writeFileSync(secret, `${SECRET}\n`);
    const dir = asapRunDir((transcript) => symlinkSync(secret, transcript));
    const r = report(dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.html).not.toContain('HOST-SECRET-8c1f2e');
    expect(r.html).toMatch(
      /transcript left out of this report: .*run-0\.md is a symbolic link to .*secret\.txt, outside the run directory/,
    );
  });

  it('a transcript in a linked directory leading out of the run, or a FIFO, is left out too; a real transcript is shown', () => {
    const outside = tempDir();
    writeFileSync(join(outside, 'run-0.md'), `${SECRET}\n`);
    const linkedDir = asapRunDir((transcript) => {
      rmSync(join(transcript, '..'), { recursive: true });
      symlinkSync(outside, join(transcript, '..'));
    });
    const linked = report(linkedDir);
    expect(linked.code, linked.stderr).toBe(0);
    expect(linked.html).not.toContain('HOST-SECRET-8c1f2e');
    expect(linked.html).toMatch(/transcript left out of this report: .*run-0\.md is outside the run directory/);

    const fifo = report(asapRunDir((transcript) => execFileSync('mkfifo', [transcript])));
    expect(fifo.code, fifo.stderr).toBe(0);
    expect(fifo.html).toMatch(/transcript left out of this report: .*run-0\.md is a FIFO/);

    const plain = report(asapRunDir((transcript) => writeFileSync(transcript, '# Task\nthe real transcript\n')));
    expect(plain.html).toContain('the real transcript');
  });
});

describe('class 9: timeouts beyond what Node keeps are refused at load', () => {
  it('[verifier] timeout_sec = 3000000 is refused naming task.toml and the field (the timer fired after 1 ms)', () => {
    const { set, task } = terminalSet();
    const toml = join(task, 'task.toml');
    writeFileSync(toml, readFileSync(toml, 'utf8').replace(/\[verifier\]\ntimeout_sec = [\d.]+/, '[verifier]\ntimeout_sec = 3000000'));
    expect(readFileSync(toml, 'utf8')).toContain('timeout_sec = 3000000');
    expectOneLineError(
      asapTerminal(set),
      literally(`${toml}: field "verifier.timeout_sec": 3000000 s is more than the ${MAX_TIMEOUT_S} s`),
    );
  });

  it('[agent] timeout_sec and [environment] build_timeout_sec beyond one day too', () => {
    for (const [section, key] of [
      ['agent', 'timeout_sec'],
      ['environment', 'build_timeout_sec'],
    ] as const) {
      const { task } = terminalSet();
      const toml = join(task, 'task.toml');
      const line = new RegExp(`(\\[${section}\\]\\n${key} = )[\\d.]+`);
      const text = readFileSync(toml, 'utf8');
      expect(text).toMatch(line);
      writeFileSync(
        toml,
        text.replace(line, (_, head: string) => `${head}2592000`),
      ); // 30 days, past Node's 24.8
      expect(() => loadTerminalTask(task)).toThrow(literally(`${toml}: field "${section}.${key}": 2592000 s is more than`));
    }
  });

  it('test_timeout_s: 3e6 in a task record is refused naming the file and field', () => {
    const { file } = sweSet((record) => ({ ...record, test_timeout_s: 3e6 }));
    expectOneLineError(replay(file), literally(`${file}: field "test_timeout_s": must be at most ${MAX_TIMEOUT_S} s`));
  });

  it('--action-timeout and --http-timeout beyond one day are refused as usage errors', () => {
    const absent = join(tempDir(), 'absent');
    expectOneLineError(runProbe(['asap', '--tasks', absent, '--ckpt', CKPT.agent, '--action-timeout', '3000000']), /--action-timeout/);
    expectOneLineError(runProbe(['asap', '--tasks', absent, '--ckpt', CKPT.agent, '--http-timeout', '3000000']), /--http-timeout/);
  });

  it.skipIf(skipWithoutBwrap)('a timeout Node would fire at once is refused by the sandbox, not run for 1 ms', async () => {
    // Past the load checks (a bug in probe, or an API caller): the command must not be cut at once and graded as timed out.
    const task = (await loadTaskFile(join(SWE_TASK, 'task.json')))[0]!;
    const sb = await openSandbox('local', task);
    try {
      await expect(sb.exec('sleep 0.2; echo finished', { timeoutMs: 3e9 })).rejects.toThrow(RangeError);
      expect((await sb.exec('sleep 0.2; echo finished', { timeoutMs: MAX_TIMEOUT_S * 1000 })).output).toBe('finished\n');
    } finally {
      await sb.close();
    }
    expect(() => boundedTimeout(() => {}, Number.NaN)).toThrow(RangeError);
  });
});
