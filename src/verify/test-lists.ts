/**
 * What a task's FAIL_TO_PASS / PASS_TO_PASS lists mean for its log parser, and the check
 * that refuses lists that cannot grade anything.
 *
 * With a parser that names tests (`pytest`, `unittest`, `node-test`) each listed name is
 * looked up in the parsed log. With `exit-code` the whole suite is the one test: its exit
 * status is the only result, every FAIL_TO_PASS name stands for it (`["exit-code"]`,
 * `["tests/run.sh"]`, any name), an empty FAIL_TO_PASS means the suite itself, and
 * PASS_TO_PASS must be empty (the suite fails at the base, so nothing in it passes there).
 */
import { InputError, type InputLocation } from '../errors.ts';
import type { LogParserName } from '../schema/task.ts';
import { EXIT_CODE_TEST, type TestStatus, type TestStatusMap } from './log-parsers.ts';

interface ListedTests {
  log_parser: LogParserName;
  FAIL_TO_PASS: string[];
  PASS_TO_PASS: string[];
}

/** The lists as graded: with `exit-code` and no FAIL_TO_PASS names, the suite under its own name. */
export function gradedLists(task: ListedTests): { failToPass: string[]; passToPass: string[] } {
  if (task.log_parser === 'exit-code' && task.FAIL_TO_PASS.length === 0)
    return { failToPass: [EXIT_CODE_TEST], passToPass: task.PASS_TO_PASS };
  return { failToPass: task.FAIL_TO_PASS, passToPass: task.PASS_TO_PASS };
}

/** A listed test's status in a parsed log; undefined when the log never mentions it. */
export function listedStatus(parser: LogParserName, statuses: TestStatusMap, name: string): TestStatus | undefined {
  return statuses.get(parser === 'exit-code' ? EXIT_CODE_TEST : name);
}

/**
 * Refuses lists that grade nothing: an empty FAIL_TO_PASS with a parser that names tests
 * (the untouched base would "already pass"), and PASS_TO_PASS with `exit-code`.
 */
export function checkTestLists(task: ListedTests, where: Omit<InputLocation, 'field'>): void {
  if (task.log_parser === 'exit-code') {
    if (task.PASS_TO_PASS.length > 0) {
      throw new InputError(
        { ...where, field: 'PASS_TO_PASS' },
        'must be empty with log_parser "exit-code": the whole suite is the one test, and it fails at the base',
      );
    }
    return;
  }
  if (task.FAIL_TO_PASS.length === 0) {
    throw new InputError(
      { ...where, field: 'FAIL_TO_PASS' },
      `is empty: with log_parser "${task.log_parser}" a task needs at least one test that fails at the base and passes once fixed (only "exit-code", where the whole suite is the test, takes an empty list)`,
    );
  }
}
