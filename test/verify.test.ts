/** Log parsers and grading, on real runs in the sandbox and on hand-made logs. */
import { describe, expect, it } from 'vitest';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import { parseTestLog } from '../src/verify/log-parsers.ts';
import { verifyRepeated, verifyState } from '../src/verify/verifier.ts';
import { fixtureTask } from './helpers/tasks.ts';

/** Loaded once: loading is async; each describe takes its own copy. */
const MISSING_COLON = await fixtureTask('missing-colon');

describe('log parsers', () => {
  it('pytest -rA summary lines', () => {
    const log = [
      '============ short test summary info ============',
      'PASSED tests/test_a.py::test_ok',
      'FAILED tests/test_a.py::test_bad - AssertionError: assert 1 == 2',
      'ERROR tests/test_b.py::test_err - ImportError',
      'SKIPPED [1] tests/test_c.py:3: no network',
      'XFAIL tests/test_a.py::test_known',
      'PASSED tests/test_a.py::test_param[a-b]',
    ].join('\n');
    expect(Object.fromEntries(parseTestLog('pytest', log, 1))).toEqual({
      'tests/test_a.py::test_ok': 'PASSED',
      'tests/test_a.py::test_bad': 'FAILED',
      'tests/test_b.py::test_err': 'ERROR',
      'tests/test_a.py::test_known': 'PASSED',
      'tests/test_a.py::test_param[a-b]': 'PASSED',
    });
  });

  it('unittest / django verbose, including docstring lines and tracebacks', () => {
    const log = [
      'test_add (tests.test_math.MathTests.test_add) ... ok',
      'test_div (tests.test_math.MathTests.test_div)',
      'Division by zero raises. ... FAIL',
      'test_skip (tests.test_math.MathTests.test_skip) ... skipped "later"',
      'test_boom (tests.test_math.MathTests.test_boom) ... ERROR',
      '',
      'FAIL: test_div (tests.test_math.MathTests.test_div)',
    ].join('\n');
    expect(Object.fromEntries(parseTestLog('unittest', log, 1))).toEqual({
      'test_add (tests.test_math.MathTests.test_add)': 'PASSED',
      'test_div (tests.test_math.MathTests.test_div)': 'FAILED',
      'test_skip (tests.test_math.MathTests.test_skip)': 'SKIPPED',
      'test_boom (tests.test_math.MathTests.test_boom)': 'ERROR',
    });
  });

  it('TAP from node --test, with nested subtests', () => {
    const log = [
      'TAP version 13',
      '# Subtest: cart',
      '    # Subtest: adds items',
      '    ok 1 - adds items',
      '    # Subtest: applies discount',
      '    not ok 2 - applies discount',
      '    1..2',
      'not ok 1 - cart',
      '# Subtest: skipped one',
      'ok 2 - skipped one # SKIP',
      '1..2',
    ].join('\n');
    expect(Object.fromEntries(parseTestLog('node-test', log, 1))).toEqual({
      'cart > adds items': 'PASSED',
      'cart > applies discount': 'FAILED',
      cart: 'FAILED',
      'skipped one': 'SKIPPED',
    });
  });

  it('exit-code', () => {
    expect(parseTestLog('exit-code', 'whatever', 0).get('exit-code')).toBe('PASSED');
    expect(parseTestLog('exit-code', 'whatever', 3).get('exit-code')).toBe('FAILED');
  });
});

describe.skipIf(skipWithoutBwrap)('verifier in the local sandbox', () => {
  const task = { ...MISSING_COLON };
  const fresh = (t: typeof task) => freshSandboxes((x) => openSandbox('local', x), t);
  const fixed =
    'diff --git a/tests/missing_colon.py b/tests/missing_colon.py\n--- a/tests/missing_colon.py\n+++ b/tests/missing_colon.py\n@@ -1,7 +1,7 @@\n #!/usr/bin/env python3\n \n \n-def division(a: float, b: float) -> float\n+def division(a: float, b: float) -> float:\n     return a/b\n \n \n';

  it('grades the base state as failing and the fixed state as resolved, SWE-bench style', async () => {
    const base = await verifyState(fresh(task), task, { base_commit: task.base_commit, patch: '' });
    expect(base.status).toBe('ok');
    expect(base.resolved).toBe(false);
    expect(base.failToPass.failed).toEqual(task.FAIL_TO_PASS);
    expect(base.passToPass.passed).toEqual(task.PASS_TO_PASS);
    const good = await verifyRepeated(fresh(task), task, { base_commit: task.base_commit, patch: fixed }, 3);
    expect(good.resolved).toBe(true);
    expect(good.flaky).toBe(false);
    expect([base.applies, good.applies]).toEqual([true, true]);
  });

  it('says when a patch does not apply to a clean base, and grades nothing', async () => {
    const stale = fixed.replace('-def division(a: float, b: float) -> float\n', '-def division(a, b)\n');
    const v = await verifyState(fresh(task), task, { base_commit: task.base_commit, patch: stale });
    expect(v).toMatchObject({ applies: false, resolved: false, status: 'error' });
    expect(v.reason).toMatch(/do not apply to the base/);
  });

  it('rejects a log that claims passes while the command failed', async () => {
    const liar = {
      ...task,
      test_cmd: 'echo "PASSED tests/test_missing_colon.py::test_division"; echo "PASSED tests/test_tribonaccy.py::test_tribonacci"; exit 1',
    };
    const v = await verifyState(fresh(liar), liar, { base_commit: task.base_commit, patch: '' });
    expect(v.resolved).toBe(false);
    expect(v.status).toBe('error');
    expect(v.reason).toMatch(/exited 1/);
  });

  it('rejects an empty log where the suite never ran', async () => {
    const never = { ...task, test_cmd: 'python3 -m pytest -rA does/not/exist.py' };
    const v = await verifyState(fresh(never), never, { base_commit: task.base_commit, patch: fixed });
    expect(v.status).toBe('error');
    expect(v.reason).toMatch(/never ran/);
  });

  it('times out a test command that hangs', async () => {
    const hangs = { ...task, test_cmd: 'sleep 60', test_timeout_s: 1 };
    const v = await verifyState(fresh(hangs), hangs, { base_commit: task.base_commit, patch: fixed });
    expect(v.status).toBe('timeout');
    expect(v.resolved).toBe(false);
  });

  it('marks a task whose verdict varies as flaky', async () => {
    // A suite whose exit status is a coin flip; 6 tries of 3 runs each agree only with probability 4^-6.
    const coin = {
      ...task,
      test_cmd: '[ $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) -eq 0 ]',
      log_parser: 'exit-code' as const,
      FAIL_TO_PASS: ['exit-code'],
      PASS_TO_PASS: [],
    };
    let flaky = false;
    for (let attempt = 0; attempt < 6 && !flaky; attempt++) {
      const v = await verifyRepeated(fresh(coin), coin, { base_commit: task.base_commit, patch: '' }, 3);
      flaky = v.flaky;
      if (flaky) expect(v.reason).toMatch(/varied over 3 runs/);
    }
    expect(flaky).toBe(true);
  });
});
