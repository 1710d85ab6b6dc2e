/** `probe task`: a task record from a task source directory, refused in one line when it could grade nothing. */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { tempDir } from './helpers/paths.ts';

const FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'missing-colon');
const TEST_CMD = 'PYTHONPATH=src python3 -m pytest -rA -p no:cacheprovider tests/test_missing_colon.py tests/test_tribonaccy.py';
const F2P = 'tests/test_missing_colon.py::test_division';
const P2P = 'tests/test_tribonaccy.py::test_tribonacci';

/** A task source directory: the fixture's repo/ and tests-added/, without its meta.json. */
function sourceDir(): string {
  const dir = join(tempDir(), 'my-task');
  mkdirSync(dir);
  cpSync(join(FIXTURE, 'repo'), join(dir, 'repo'), { recursive: true });
  cpSync(join(FIXTURE, 'tests-added'), join(dir, 'tests-added'), { recursive: true });
  return dir;
}

const record = (dir: string) => JSON.parse(readFileSync(join(dir, 'task.json'), 'utf8')) as Record<string, unknown>;

describe('probe task', () => {
  it('names the flags a record still needs, in one line, and writes nothing', () => {
    const dir = sourceDir();
    expectOneLineError(
      runProbe(['task', dir, '--problem', 'x']),
      /my-task: a task record needs --test-cmd, --fail \(flags, or the same fields in meta\.json\)/,
    );
    expectOneLineError(runProbe(['task', join(dir, 'nope'), '--problem', 'x']), /nope: is not a directory/);
    expectOneLineError(runProbe(['task', dir, '--log-parser', 'junit']), /--log-parser/);
  });

  it('reads meta.json for what the flags leave out; a plain tree commits to the same base_commit as the fixture', () => {
    const dir = sourceDir();
    cpSync(join(FIXTURE, 'meta.json'), join(dir, 'meta.json'));
    const run = runProbe(['task', dir, '--no-check', '--id', 'renamed-1']);
    expect(run.code, run.stderr).toBe(0);
    const fixture = JSON.parse(readFileSync(join(FIXTURE, 'task.json'), 'utf8')) as Record<string, unknown>;
    expect(record(dir)).toEqual({ ...fixture, instance_id: 'renamed-1' });
    expect(run.stderr).toMatch(/task renamed-1, base_commit [0-9a-f]{12}, 1 FAIL_TO_PASS, 1 PASS_TO_PASS/);
  });

  it("a git repository's base_commit is its HEAD in full", () => {
    const dir = sourceDir();
    const git = (...args: string[]) =>
      spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: join(dir, 'repo'), encoding: 'utf8' }).stdout.trim();
    git('init', '-q');
    git('add', '-A');
    git('commit', '-q', '-m', 'base');
    const head = git('rev-parse', 'HEAD');
    const run = runProbe(['task', dir, '--no-check', '--problem', 'p', '--test-cmd', TEST_CMD, '--fail', F2P]);
    expect(run.code, run.stderr).toBe(0);
    expect(record(dir).base_commit).toBe(head);
  });

  describe.skipIf(skipWithoutBwrap)('the check at the base state (local jail)', () => {
    it('reports FAIL_TO_PASS failing and PASS_TO_PASS passing, and says which listed tests the log never names', () => {
      const dir = sourceDir();
      const run = runProbe([
        'task',
        dir,
        '--problem',
        'p',
        '--test-cmd',
        TEST_CMD,
        '--fail',
        F2P,
        'tests/test_nope.py::test_x',
        '--pass',
        P2P,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(`FAIL_TO_PASS  1 failing as they should, 1 not in the log: tests/test_nope.py::test_x`);
      expect(run.stderr).toContain('PASS_TO_PASS  1 of 1 passing');
    }, 60_000);

    it('refuses a FAIL_TO_PASS that already passes at the base, naming task.json and the field', () => {
      const dir = sourceDir();
      const run = runProbe(['task', dir, '--problem', 'p', '--test-cmd', TEST_CMD, '--fail', P2P]);
      expectOneLineError(
        run,
        /my-task\/task\.json: field "FAIL_TO_PASS": (the tests already pass|tests\/test_tribonaccy\.py::test_tribonacci already pass)/,
      );
    }, 60_000);
  });
});
