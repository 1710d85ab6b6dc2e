/**
 * The verifier: grade a candidate's changes as SWE-bench does, and stricter.
 *
 * The graded state is the candidate's patch applied to a freshly restored base (nothing
 * its commands left outside the tree, or in `.git`, counts), with every change that may
 * alter how the tests run dropped and reported as `tampering` (graded-tree.ts): test files
 * reset to the base, conftest/sitecustomize/.pth hooks, runner configuration, shadows of
 * the runner's modules. Then the task's test patch is applied, its test command run, the
 * log parsed: resolved when every FAIL_TO_PASS and PASS_TO_PASS test passes.
 *
 * Hardening: a log that claims passes while the command failed is rejected, and so is a
 * run in which no test ran at all; a run past the task's time limit is a timeout.
 */
import { ProbeError } from '../errors.ts';
import type { EnvState, LoadedTask } from '../schema/task.ts';
import type { SandboxLease } from '../sandbox/pool.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { prepareGradedTree } from './graded-tree.ts';
import type { Tampering } from './harness-paths.ts';
import { parseTestLog, type TestStatusMap } from './log-parsers.ts';

export type { Tampering } from './harness-paths.ts';

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
  /** Changes dropped from the graded state because they may alter how the tests run (empty when clean). */
  tampering: Tampering[];
  /** Test files the candidate added: left out of the graded run, since only the task's tests grade. */
  ownTests: string[];
  /** Whether the candidate's patch applied to a clean base (false: nothing was graded). */
  applies: boolean;
}

/** A verdict for a state that could not be graded: never resolved, every listed test failing. */
function ungraded(task: LoadedTask, status: Verdict['status'], reason: string, started: number, rest: Partial<Verdict> = {}): Verdict {
  return {
    resolved: false, status, reason, exitCode: -1, log: '', tampering: [], ownTests: [], applies: true, ...rest, durationMs: performance.now() - started,
    failToPass: { passed: [], failed: task.FAIL_TO_PASS }, passToPass: { passed: [], failed: task.PASS_TO_PASS },
  };
}

function outcome(tests: string[], statuses: TestStatusMap): TestOutcome {
  const passed = tests.filter((t) => statuses.get(t) === 'PASSED');
  return { passed, failed: tests.filter((t) => statuses.get(t) !== 'PASSED') };
}

/**
 * Grades a candidate state: the sandbox is restored to it (a fresh copy of the base with
 * the state's patch applied), harness changes are dropped, then the tests run.
 */
export async function verifyPatch(sb: Sandbox, task: LoadedTask, state: EnvState): Promise<Verdict> {
  const started = performance.now();
  let tampering: Tampering[] = [];
  let ownTests: string[] = [];
  const fail = (status: Verdict['status'], reason: string, log = '', exitCode = -1) => ungraded(task, status, reason, started, { log, exitCode, tampering, ownTests });
  try {
    await sb.restore(state);
  } catch (error) {
    if (!(error instanceof ProbeError)) throw error;
    return ungraded(task, 'error', `the candidate's changes do not apply to the base: ${error.message}`, started, { applies: false });
  }
  try {
    ({ tampering, ownTests } = await prepareGradedTree(sb, task, state.base_commit, state.patch));
  } catch (error) {
    if (!(error instanceof ProbeError)) throw error;
    return fail('error', error.message);
  }
  if (task.test_patch.trim()) {
    // On stdin: no file in /tmp for anything to have replaced or linked first.
    const applied = await sb.exec('git apply --whitespace=nowarn -', { timeoutMs: 60_000, stdin: task.test_patch });
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
  return { resolved: allListedPass, status: 'ok', failToPass, passToPass, exitCode: run.exitCode, log: run.output, durationMs: performance.now() - started, tampering, ownTests, applies: true };
}

/**
 * Grades what a sandbox's working tree holds: its cumulative patch against the base (as
 * SWE-bench grades a model's patch), in the same sandbox restored from scratch.
 */
export async function verifySandbox(sb: Sandbox, task: LoadedTask): Promise<Verdict> {
  let patch: string;
  try {
    patch = await sb.diff();
  } catch (error) {
    if (!(error instanceof ProbeError)) throw error;
    return ungraded(task, 'error', `cannot read the candidate's changes: ${error.message}`, performance.now(), { applies: false });
  }
  return verifyPatch(sb, task, { base_commit: task.base_commit, patch });
}

/** Verifies one state in a leased sandbox. */
export function verifyState(lease: SandboxLease, task: LoadedTask, state: EnvState): Promise<Verdict> {
  return lease((sb) => verifyPatch(sb, task, state));
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
