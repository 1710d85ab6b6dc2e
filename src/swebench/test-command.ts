/**
 * The test command the SWE-bench harness's evaluation script runs (test_spec/python.py
 * `make_eval_script_list_py`), composed as one script for the verifier: activate the
 * `testbed` environment, the spec's eval commands, then the spec's test command with the
 * test directives taken from the test patch (`get_test_directives`).
 *
 * The verifier already does the script's other steps: it resets the test files to the base
 * and applies the test patch before running this. The harness's `install` step is left
 * out: the image holds its result, and the sandbox user may not write the environment.
 */
import type { RepoSpec, VersionSpec } from './specs.ts';

/** SWE-bench's NON_TEST_EXTS: files of a test patch that are not tests to run ("csv" without a dot, as the harness has it). */
const NON_TEST_EXTS = ['.json', '.png', 'csv', '.txt', '.md', '.jpg', '.jpeg', '.pkl', '.yml', '.yaml', '.toml'];

/** Files a test patch touches, as `diff --git a/… b/(…)` names them. */
export function testPatchFiles(testPatch: string): string[] {
  return [...testPatch.matchAll(/^diff --git a\/.* b\/(.*)$/gm)].map((m) => m[1]!);
}

/** The tests the harness runs: test files, or for django the test modules ("tests/a/b.py" → "a.b"). */
export function testDirectives(directives: RepoSpec['directives'], testPatch: string): string[] {
  if (directives === 'humaneval') return ['test.py'];
  const files = testPatchFiles(testPatch).filter((f) => !NON_TEST_EXTS.some((ext) => f.endsWith(ext)));
  if (directives === 'paths') return files;
  return files.map((f) => (f.endsWith('.py') ? f.slice(0, -3) : f).replace(/^tests\//, '').replace(/\//g, '.'));
}

/** Where the harness's images hold conda and the task's environment. */
export const CONDA_ACTIVATE = 'source /opt/miniconda3/bin/activate';
export const CONDA_ENV = 'testbed';

/** The script the verifier runs; its last command is the test run, so its exit status is the tests'. */
export function composeTestCommand(version: VersionSpec, directives: string[]): string {
  const testCmd = Array.isArray(version.test_cmd) ? version.test_cmd.join(' && ') : version.test_cmd;
  return [CONDA_ACTIVATE, `conda activate ${CONDA_ENV}`, ...(version.eval_commands ?? []), [testCmd, ...directives].join(' ')].join('\n');
}
