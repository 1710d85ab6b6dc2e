/**
 * Test-log parsers: from a test run's output to a status per test, as SWE-bench's
 * harness does it (`pytest -rA` summary lines, unittest/django verbose lines, TAP from
 * `node --test`, sympy's bin/test), plus `exit-code` for suites that only report success or failure (what
 * the task's lists mean then: test-lists.ts).
 * A test reported more than once keeps its worst status.
 */
import type { LogParserName } from '../schema/task.ts';
import { parseSympyLog } from './sympy-log.ts';

export type TestStatus = 'PASSED' | 'FAILED' | 'SKIPPED' | 'ERROR';
export type TestStatusMap = Map<string, TestStatus>;

const RANK: Record<TestStatus, number> = { PASSED: 0, SKIPPED: 1, FAILED: 2, ERROR: 2 };

/**
 * Records a test's status; a test reported twice keeps its worse status. A failure is never
 * undone by a later line saying the same test passed (printed by the code under test, or by
 * another test of the same name).
 */
export function record(map: TestStatusMap, name: string, status: TestStatus): void {
  const known = map.get(name);
  if (known === undefined || RANK[status] > RANK[known]) map.set(name, status);
}

/** The name under which `exit-code` reports the whole suite. */
export const EXIT_CODE_TEST = 'exit-code';

const PYTEST_STATUSES: Record<string, TestStatus> = {
  PASSED: 'PASSED',
  FAILED: 'FAILED',
  ERROR: 'ERROR',
  SKIPPED: 'SKIPPED',
  XFAIL: 'PASSED',
  XPASS: 'FAILED',
};

/** `pytest -rA`: "PASSED tests/test_a.py::test_x", "FAILED tests/test_a.py::test_y - AssertionError". */
function parsePytest(log: string): TestStatusMap {
  const map: TestStatusMap = new Map();
  for (const raw of log.split('\n')) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, '').trim();
    const m = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)/.exec(line);
    if (!m || m[2]!.startsWith('[')) continue;
    record(map, m[2]!, PYTEST_STATUSES[m[1]!]!);
  }
  return map;
}

/**
 * unittest / django verbose: "test_x (pkg.tests.Case.test_x) ... ok". With a docstring the
 * name stands alone on its line and the outcome ends the next one.
 */
function parseUnittest(log: string): TestStatusMap {
  const map: TestStatusMap = new Map();
  const lines = log.split('\n');
  const OUTCOME = / \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$/;
  const NAME = /^(\S+ \([\w.]+\))/;
  for (let i = 0; i < lines.length; i++) {
    const name = NAME.exec(lines[i]!);
    if (!name) continue;
    const result = OUTCOME.exec(lines[i]!) ?? (lines[i]!.trim() === name[1] ? OUTCOME.exec(lines[i + 1] ?? '') : null);
    if (!result) continue;
    const word = result[1]!;
    record(
      map,
      name[1]!,
      word === 'ok' || word === 'expected failure'
        ? 'PASSED'
        : word.startsWith('skipped')
          ? 'SKIPPED'
          : word === 'ERROR'
            ? 'ERROR'
            : 'FAILED',
    );
  }
  // Tracebacks name failures too: "FAIL: test_x (pkg.Case.test_x)".
  for (const m of log.matchAll(/^(FAIL|ERROR): (\S+ \([\w.]+\))/gm)) record(map, m[2]!, m[1] === 'FAIL' ? 'FAILED' : 'ERROR');
  return map;
}

/** TAP from `node --test` (the default reporter when output is not a terminal); nested tests as "parent > child". */
function parseNodeTest(log: string): TestStatusMap {
  const map: TestStatusMap = new Map();
  const stack: string[] = [];
  for (const line of log.split('\n')) {
    const subtest = /^(\s*)# Subtest: (.*)$/.exec(line);
    if (subtest) {
      const depth = subtest[1]!.length / 4;
      stack.length = depth;
      stack[depth] = subtest[2]!;
      continue;
    }
    const m = /^(\s*)(not ok|ok) \d+ - (.*?)(?:\s+#\s*(SKIP|TODO)\b.*)?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    const name = [...stack.slice(0, depth), m[3]!].join(' > ');
    record(map, name, m[4] ? 'SKIPPED' : m[2] === 'ok' ? 'PASSED' : 'FAILED');
    stack.length = depth;
  }
  return map;
}

export function parseTestLog(parser: LogParserName, log: string, exitCode: number): TestStatusMap {
  switch (parser) {
    case 'pytest':
      return parsePytest(log);
    case 'unittest':
      return parseUnittest(log);
    case 'node-test':
      return parseNodeTest(log);
    case 'sympy':
      return parseSympyLog(log);
    case 'exit-code':
      return new Map([[EXIT_CODE_TEST, exitCode === 0 ? 'PASSED' : 'FAILED']]);
  }
}
