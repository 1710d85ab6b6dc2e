/**
 * Listed tests the log never mentions are their own verdict ("not in the log"), the
 * `exit-code` convention, and lists that grade nothing refused at load: on the fixture
 * task's real repository, in the local sandbox, and through the real `probe` bin.
 */
import { cpSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeMissingAtBase, replayTrajectory } from '../src/replay/replay.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';
import { unresolvedCauses, verifyState } from '../src/verify/verifier.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { tempDir } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { fixtureTask } from './helpers/tasks.ts';

const task = await fixtureTask('missing-colon');
const fixed =
  'diff --git a/tests/missing_colon.py b/tests/missing_colon.py\n--- a/tests/missing_colon.py\n+++ b/tests/missing_colon.py\n@@ -1,7 +1,7 @@\n #!/usr/bin/env python3\n \n \n-def division(a: float, b: float) -> float\n+def division(a: float, b: float) -> float:\n     return a/b\n \n \n';
const fresh = (t: LoadedTask) => freshSandboxes((x) => openSandbox('local', x), t);

/** `name` in a fresh directory beside a copy of the fixture's repository (a repo_path stays inside its task set). */
function besideRepo(name: string): string {
  const file = join(tempDir(), name);
  cpSync(task.repoDir!, join(dirname(file), 'repo'), { recursive: true });
  return file;
}

/** The fixture task with some fields changed, written as a task file and read back as a user's would be. */
function taskFile(changes: Record<string, unknown>): string {
  const { file: _file, repoDir: _repoDir, ...record } = task;
  const file = besideRepo('task.json');
  writeFileSync(file, JSON.stringify({ ...record, repo_path: 'repo', ...changes }));
  return file;
}

/** 44 PASS_TO_PASS ids as the pydicom row has them: paths of the machine that made the row, which no other machine's log shows. */
const machinePaths = Array.from(
  { length: 44 },
  (_, i) => `/n/fs/p-swe-bench/temp/pydicom/tmp${i}/pydicom__pydicom__2.2/pydicom/tests/test_x.py::test_${i}`,
);

describe('test lists that grade nothing are refused at load', () => {
  it('an empty FAIL_TO_PASS with pytest names the file and field, exit 2', async () => {
    const file = taskFile({ FAIL_TO_PASS: [] });
    await expect(loadTaskFile(file)).rejects.toThrow(`${file}: field "FAIL_TO_PASS": is empty`);
    expectOneLineError(
      runProbe(['replay', real('mini-swe-agent/github_issue.v2.traj.json'), '--task', file]),
      /task\.json: field "FAIL_TO_PASS": is empty: with log_parser "pytest"/,
    );
  });

  it('a JSON-encoded empty list (as SWE-bench rows carry it) on line 2 of a JSONL file too', async () => {
    const { file: _file, repoDir: _repoDir, ...record } = task;
    const file = besideRepo('rows.jsonl');
    writeFileSync(
      file,
      `${JSON.stringify({ ...record, repo_path: 'repo' })}\n${JSON.stringify({ ...record, repo_path: 'repo', FAIL_TO_PASS: '[]' })}\n`,
    );
    await expect(loadTaskFile(file)).rejects.toThrow(`${file}:2: field "FAIL_TO_PASS"`);
  });

  it('exit-code takes an empty FAIL_TO_PASS, and refuses PASS_TO_PASS', async () => {
    expect((await loadTaskFile(taskFile({ log_parser: 'exit-code', FAIL_TO_PASS: [], PASS_TO_PASS: [] })))[0]!.FAIL_TO_PASS).toEqual([]);
    const file = taskFile({ log_parser: 'exit-code', FAIL_TO_PASS: [] });
    await expect(loadTaskFile(file)).rejects.toThrow(`${file}: field "PASS_TO_PASS": must be empty with log_parser "exit-code"`);
  });
});

describe('why a state is not resolved, by cause', () => {
  it('counts each cause, caps the names, and says which failed or were missing at the base already', () => {
    const text = unresolvedCauses(
      {
        failToPass: { passed: [], failed: ['t::f1', 't::f2'], missing: [] },
        passToPass: { passed: ['t::ok'], failed: ['t::p1', 't::p2'], missing: machinePaths },
      },
      {
        failToPass: { passed: [], failed: ['t::f1', 't::f2'], missing: [] },
        passToPass: { passed: ['t::ok', 't::p1'], failed: ['t::p2'], missing: machinePaths.slice(0, 40) },
      },
    );
    expect(describeMissingAtBase({ failToPass: [], passToPass: machinePaths })).toBe(
      `not in the base state's log: 44 PASS_TO_PASS, which should pass here: the task names tests its environment does not produce, and no trajectory can make them pass: ${machinePaths.slice(0, 5).join(', ')} and 39 more`,
    );
    expect(text).toBe(
      `2 FAIL_TO_PASS still failing: t::f1, t::f2; 1 PASS_TO_PASS broken (failing in the log, passing at the base): t::p1; 1 PASS_TO_PASS failing as at the base (the environment's, not the candidate's): t::p2; 44 not in the log (44 PASS_TO_PASS; 40 of them were already not in the base state's log): ${machinePaths.slice(0, 5).join(', ')} and 39 more`,
    );
  });
});

describe.skipIf(skipWithoutBwrap)('missing tests in real runs (local sandbox)', () => {
  it('a listed test the suite never produces is missing, not failed', async () => {
    const ghost = 'tests/test_tribonaccy.py::test_not_written';
    const t = { ...task, PASS_TO_PASS: [...task.PASS_TO_PASS, ghost] };
    const v = await verifyState(fresh(t), t, { base_commit: t.base_commit, patch: fixed });
    expect(v.status).toBe('ok');
    expect(v.resolved).toBe(false); // graded as SWE-bench grades it: not passed
    expect(v.failToPass).toEqual({ passed: task.FAIL_TO_PASS, failed: [], missing: [] });
    expect(v.passToPass).toEqual({ passed: task.PASS_TO_PASS, failed: [], missing: [ghost] });
  });

  it('exit-code with an empty FAIL_TO_PASS: the suite is the test (base fails, the fix passes)', async () => {
    const [t] = await loadTaskFile(
      taskFile({
        log_parser: 'exit-code',
        FAIL_TO_PASS: [],
        PASS_TO_PASS: [],
        test_cmd: 'python3 -m pytest -q -p no:cacheprovider tests/test_missing_colon.py',
      }),
    );
    const [base, good] = await Promise.all([
      verifyState(fresh(t!), t!, { base_commit: t!.base_commit, patch: '' }),
      verifyState(fresh(t!), t!, { base_commit: t!.base_commit, patch: fixed }),
    ]);
    expect(base).toMatchObject({ status: 'ok', resolved: false, failToPass: { passed: [], failed: ['exit-code'], missing: [] } });
    expect(good).toMatchObject({ status: 'ok', resolved: true, failToPass: { passed: ['exit-code'], failed: [], missing: [] } });
  });

  it("exit-code with the script named in FAIL_TO_PASS: the name takes the script's exit status", async () => {
    const [t] = await loadTaskFile(
      taskFile({
        log_parser: 'exit-code',
        FAIL_TO_PASS: ['tests/missing_colon.py'],
        PASS_TO_PASS: [],
        test_cmd: 'python3 tests/missing_colon.py',
      }),
    );
    const [base, good] = await Promise.all([
      verifyState(fresh(t!), t!, { base_commit: t!.base_commit, patch: '' }),
      verifyState(fresh(t!), t!, { base_commit: t!.base_commit, patch: fixed }),
    ]);
    expect(base).toMatchObject({ resolved: false, exitCode: 1, failToPass: { failed: ['tests/missing_colon.py'] } });
    expect(good).toMatchObject({
      resolved: true,
      exitCode: 0,
      failToPass: { passed: ['tests/missing_colon.py'], failed: [], missing: [] },
    });
    expect(good.log).toBe('8.2\n');
  });

  it.skipIf(!hasRealData)(
    'a task naming tests its environment cannot produce: flagged at the base, and the rejection says "not in the log", briefly',
    async () => {
      const t = { ...task, PASS_TO_PASS: [...task.PASS_TO_PASS, ...machinePaths] };
      const r = await replayTrajectory(importTrajectory(real('mini-swe-agent/github_issue.v2.traj.json')), t, {
        openSandbox: (x: LoadedTask) => openSandbox('local', x),
        sandboxName: 'local',
        repeats: 1,
      });
      expect(r.missingAtBase).toEqual({ failToPass: [], passToPass: machinePaths });
      expect(r.base.passToPass.passed).toEqual(task.PASS_TO_PASS);
      expect(r.final?.failToPass).toEqual({ passed: task.FAIL_TO_PASS, failed: [], missing: [] });
      expect(r.final?.passToPass.missing).toEqual(machinePaths);
      expect(r.decisiveStep).toBeNull();
      expect(r.rejected).toBe(
        `final state does not pass: 44 not in the log (44 PASS_TO_PASS; all 44 were already not in the base state's log): ${machinePaths.slice(0, 5).join(', ')} and 39 more`,
      );
      expect(r.rejected).not.toMatch(/broken/);
      // Each editing step keeps its state's verdict.
      expect(r.steps.filter((s) => s.edits).map((s) => s.verdict?.passToPass.missing.length)).toEqual([44, 44]);
    },
  );
});
