/**
 * The verifier: apply the task's test patch, run its test command, parse the log, grade
 * as SWE-bench does (resolved when every FAIL_TO_PASS and PASS_TO_PASS test passes).
 *
 * Hardening: a log that claims passes while the command failed is rejected, and so is a
 * run in which no test ran at all; a run past the task's time limit is a timeout.
 */
import type { EnvState, LoadedTask } from '../schema/task.ts';
import type { SandboxLease } from '../sandbox/pool.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { parseTestLog, type TestStatusMap } from './log-parsers.ts';

export interface TestOutcome { passed: string[]; failed: string[] }

export interface Verdict {
  resolved: boolean;
  status: 'ok' | 'timeout' | 'error';
  /** Why the run could not be graded, when status is not ok. */
  reason?: string;
  failToPass: TestOutcome;
  passToPass: TestOutcome;
  exitCode: number;
  log: string;
  durationMs: number;
}

const TEST_PATCH = '/tmp/.probe-test.patch';

function outcome(tests: string[], statuses: TestStatusMap): TestOutcome {
  const passed = tests.filter((t) => statuses.get(t) === 'PASSED');
  return { passed, failed: tests.filter((t) => statuses.get(t) !== 'PASSED') };
}

/** Grades an already-prepared sandbox (the state to judge is its working tree). */
export async function verifySandbox(sb: Sandbox, task: LoadedTask): Promise<Verdict> {
  const started = performance.now();
  const fail = (status: Verdict['status'], reason: string, log = '', exitCode = -1): Verdict => ({
    resolved: false, status, reason, exitCode, log, durationMs: performance.now() - started,
    failToPass: { passed: [], failed: task.FAIL_TO_PASS }, passToPass: { passed: [], failed: task.PASS_TO_PASS },
  });
  if (task.test_patch.trim()) {
    await sb.writeFile(TEST_PATCH, task.test_patch);
    const applied = await sb.exec(`git apply --whitespace=nowarn ${TEST_PATCH}`, { timeoutMs: 60_000 });
    if (applied.exitCode !== 0) return fail('error', `test_patch does not apply: ${applied.output.trim()}`, applied.output, applied.exitCode);
  }
  const run = await sb.exec(task.test_cmd, { timeoutMs: task.test_timeout_s * 1000 });
  if (run.timedOut) return fail('timeout', `test command ran past ${task.test_timeout_s}s`, run.output, run.exitCode);
  const statuses = parseTestLog(task.log_parser, run.output, run.exitCode);
  if (statuses.size === 0) return fail('error', `no test results in the log (exit ${run.exitCode}): the suite never ran`, run.output, run.exitCode);
  const failToPass = outcome(task.FAIL_TO_PASS, statuses);
  const passToPass = outcome(task.PASS_TO_PASS, statuses);
  const allListedPass = failToPass.failed.length === 0 && passToPass.failed.length === 0;
  const anyFailed = [...statuses.values()].some((s) => s === 'FAILED' || s === 'ERROR');
  if (allListedPass && run.exitCode !== 0 && !anyFailed) {
    return { ...fail('error', `the log reports every test passing but the command exited ${run.exitCode}`, run.output, run.exitCode), failToPass, passToPass };
  }
  return { resolved: allListedPass, status: 'ok', failToPass, passToPass, exitCode: run.exitCode, log: run.output, durationMs: performance.now() - started };
}

/** Verifies one state in a leased sandbox, restored to that state first. */
export function verifyState(lease: SandboxLease, task: LoadedTask, state: EnvState): Promise<Verdict> {
  return lease(async (sb) => {
    await sb.restore(state);
    return verifySandbox(sb, task);
  });
}

export interface StableVerdict extends Verdict {
  /** The verdict differed between repeated runs; such a task is excluded. */
  flaky: boolean;
  runs: number;
}

/** Verifies a state `repeats` times; a task whose verdict varies is flaky. */
export async function verifyRepeated(lease: SandboxLease, task: LoadedTask, state: EnvState, repeats: number): Promise<StableVerdict> {
  const verdicts = await Promise.all(Array.from({ length: repeats }, () => verifyState(lease, task, state)));
  const flaky = new Set(verdicts.map((v) => v.resolved)).size > 1;
  return { ...verdicts[0]!, flaky, runs: repeats, ...(flaky ? { reason: `verdict varied over ${repeats} runs: ${verdicts.map((v) => (v.resolved ? 'pass' : 'fail')).join(', ')}` } : {}) };
}
