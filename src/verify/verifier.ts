/**
 * The verifier: grade a candidate's changes as SWE-bench does, and stricter.
 *
 * The graded state is the candidate's patch applied to a freshly restored base, in a
 * grader's sandbox that none of the candidate's commands ran in (nothing they left outside
 * the tree, or in `.git`, counts), keeping only what a fix changes — edits to tracked files,
 * new files inside source packages (graded-tree.ts, harness-paths.ts). The rest is left
 * out; what of it a test run would load or read (hooks, runner configuration, the tests
 * themselves, modules named like ones the run imports) is reported as `tampering`. Then the
 * task's test patch is applied, its test command run, the log parsed: resolved when every
 * FAIL_TO_PASS and PASS_TO_PASS test passes.
 *
 * Each listed test is passed (PASSED, XFAIL), failed (the log reports it otherwise:
 * FAILED, ERROR, XPASS, and SKIPPED — SWE-bench leaves a skipped test out of its counts,
 * we count it as not passed so that a candidate cannot dodge a test by skipping it) or
 * missing (the log never mentions it: a test the environment cannot produce under that
 * name, or one whose module no longer imports). Missing is graded as SWE-bench grades it,
 * not passed, but is reported apart: it is rarely the candidate's doing.
 *
 * Hardening: a log that claims passes while the command failed is rejected, and so is a
 * run in which no test ran at all; a run past the task's time limit is a timeout.
 */
import { ProbeError } from '../errors.ts';
import type { EnvState, LoadedTask } from '../schema/task.ts';
import type { GraderLease } from '../sandbox/pool.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { prepareGradedTree } from './graded-tree.ts';
import type { Tampering } from './harness-paths.ts';
import { parseTestLog, type TestStatusMap } from './log-parsers.ts';
import { gradedLists, listedStatus } from './test-lists.ts';

export type { Tampering } from './harness-paths.ts';

export interface TestOutcome {
  passed: string[];
  /** Reported by the log as anything but passing (failed, error, skipped, unexpectedly passing). */
  failed: string[];
  /** Never mentioned by the log. */
  missing: string[];
}

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
  /** New files outside the source packages that no test run loads (a reproduction script): left out, not tampering. */
  leftOut: string[];
  /** Whether the candidate's patch applied to a clean base (false: nothing was graded). */
  applies: boolean;
}

/** A verdict for a state that could not be graded: never resolved, every listed test counted as failed (`reason` says why). */
function ungraded(task: LoadedTask, status: Verdict['status'], reason: string, started: number, rest: Partial<Verdict> = {}): Verdict {
  const lists = gradedLists(task);
  return {
    resolved: false,
    status,
    reason,
    exitCode: -1,
    log: '',
    tampering: [],
    ownTests: [],
    leftOut: [],
    applies: true,
    ...rest,
    durationMs: performance.now() - started,
    failToPass: { passed: [], failed: lists.failToPass, missing: [] },
    passToPass: { passed: [], failed: lists.passToPass, missing: [] },
  };
}

function outcome(task: LoadedTask, tests: string[], statuses: TestStatusMap): TestOutcome {
  const result: TestOutcome = { passed: [], failed: [], missing: [] };
  for (const test of tests) {
    const status = listedStatus(task.log_parser, statuses, test);
    (status === undefined ? result.missing : status === 'PASSED' ? result.passed : result.failed).push(test);
  }
  return result;
}

/** Listed tests that did not pass, failed or missing. */
export const notPassed = (o: TestOutcome): string[] => [...o.failed, ...o.missing];

/** Names for a message: the first `cap`, then how many more. */
export function listNames(names: readonly string[], cap = 5): string {
  return names.length <= cap ? names.join(', ') : `${names.slice(0, cap).join(', ')} and ${names.length - cap} more`;
}

/**
 * Why a graded state is not resolved, by cause, counted, names capped: FAIL_TO_PASS still
 * failing, PASS_TO_PASS failing in the log, listed tests not in the log. Given the base
 * state's verdict, a PASS_TO_PASS test that already failed there is told apart from one the
 * candidate broke, and tests already missing from the base's log are counted as such: the
 * task's environment never produced them, whatever the candidate did.
 */
export function unresolvedCauses(
  v: Pick<Verdict, 'failToPass' | 'passToPass'>,
  base?: Pick<Verdict, 'failToPass' | 'passToPass'>,
  cap = 5,
): string {
  const parts: string[] = [];
  if (v.failToPass.failed.length)
    parts.push(`${v.failToPass.failed.length} FAIL_TO_PASS still failing: ${listNames(v.failToPass.failed, cap)}`);
  const failedBefore = new Set(base?.passToPass.failed ?? []);
  const broken = v.passToPass.failed.filter((t) => !failedBefore.has(t));
  const stillFailing = v.passToPass.failed.filter((t) => failedBefore.has(t));
  if (broken.length)
    parts.push(
      `${broken.length} PASS_TO_PASS broken (failing in the log${base ? ', passing at the base' : ''}): ${listNames(broken, cap)}`,
    );
  if (stillFailing.length)
    parts.push(
      `${stillFailing.length} PASS_TO_PASS failing as at the base (the environment's, not the candidate's): ${listNames(stillFailing, cap)}`,
    );
  const missing = [...v.failToPass.missing, ...v.passToPass.missing];
  if (missing.length) {
    const missingBefore = new Set([...(base?.failToPass.missing ?? []), ...(base?.passToPass.missing ?? [])]);
    const lists = [
      v.failToPass.missing.length ? `${v.failToPass.missing.length} FAIL_TO_PASS` : '',
      v.passToPass.missing.length ? `${v.passToPass.missing.length} PASS_TO_PASS` : '',
    ]
      .filter(Boolean)
      .join(', ');
    const atBase = missing.filter((t) => missingBefore.has(t)).length;
    const since =
      atBase === 0
        ? ''
        : `; ${atBase === missing.length ? (missing.length === 1 ? 'it was' : `all ${atBase} were`) : `${atBase} of them were`} already not in the base state's log`;
    parts.push(`${missing.length} not in the log (${lists}${since}): ${listNames(missing, cap)}`);
  }
  return parts.join('; ') || 'no listed test failed';
}

/**
 * Grades a candidate state in a grader's sandbox: it is restored to the state (a fresh
 * copy of the base with the state's patch applied), what grading does not read is
 * dropped, then the tests run. Not exported: only a GraderLease hands out `sb`.
 */
async function verifyPatch(sb: Sandbox, task: LoadedTask, state: EnvState): Promise<Verdict> {
  const started = performance.now();
  let tampering: Tampering[] = [];
  let ownTests: string[] = [];
  let leftOut: string[] = [];
  const fail = (status: Verdict['status'], reason: string, log = '', exitCode = -1) =>
    ungraded(task, status, reason, started, { log, exitCode, tampering, ownTests, leftOut });
  try {
    await sb.restore(state);
  } catch (error) {
    if (!(error instanceof ProbeError)) throw error;
    return ungraded(task, 'error', `the candidate's changes do not apply to the base: ${error.message}`, started, { applies: false });
  }
  try {
    ({ tampering, ownTests, leftOut } = await prepareGradedTree(sb, task, state.base_commit, state.patch));
  } catch (error) {
    if (!(error instanceof ProbeError)) throw error;
    return fail('error', error.message);
  }
  if (task.test_patch.trim()) {
    // On stdin: no file in /tmp for anything to have replaced or linked first.
    const applied = await sb.exec('git apply --whitespace=nowarn -', { timeoutMs: 60_000, stdin: task.test_patch });
    if (applied.exitCode !== 0)
      return fail('error', `test_patch does not apply: ${applied.output.trim()}`, applied.output, applied.exitCode);
  }
  const run = await sb.exec(task.test_cmd, { timeoutMs: task.test_timeout_s * 1000 });
  if (run.timedOut) return fail('timeout', `test command ran past ${task.test_timeout_s}s`, run.output, run.exitCode);
  const statuses = parseTestLog(task.log_parser, run.output, run.exitCode);
  if (statuses.size === 0)
    return fail('error', `no test results in the log (exit ${run.exitCode}): the suite never ran`, run.output, run.exitCode);
  const lists = gradedLists(task);
  const failToPass = outcome(task, lists.failToPass, statuses);
  const passToPass = outcome(task, lists.passToPass, statuses);
  const allListedPass = notPassed(failToPass).length === 0 && notPassed(passToPass).length === 0;
  const anyFailed = [...statuses.values()].some((s) => s === 'FAILED' || s === 'ERROR');
  if (allListedPass && run.exitCode !== 0 && !anyFailed) {
    return {
      ...fail('error', `the log reports every test passing but the command exited ${run.exitCode}`, run.output, run.exitCode),
      failToPass,
      passToPass,
    };
  }
  return {
    resolved: allListedPass,
    status: 'ok',
    failToPass,
    passToPass,
    exitCode: run.exitCode,
    log: run.output,
    durationMs: performance.now() - started,
    tampering,
    ownTests,
    leftOut,
    applies: true,
  };
}

/**
 * Grades what a candidate's sandbox holds: its cumulative patch against the base (as
 * SWE-bench grades a model's patch), read out of it, then graded in a grader's sandbox —
 * never in the one the candidate's commands ran in.
 */
export async function gradeSandbox(candidate: Sandbox, graders: GraderLease, task: LoadedTask): Promise<Verdict> {
  let patch: string;
  try {
    patch = await candidate.diff();
  } catch (error) {
    if (!(error instanceof ProbeError)) throw error;
    return ungraded(task, 'error', `cannot read the candidate's changes: ${error.message}`, performance.now(), { applies: false });
  }
  return verifyState(graders, task, { base_commit: task.base_commit, patch });
}

/** Grades one state in a grader's sandbox. */
export function verifyState(graders: GraderLease, task: LoadedTask, state: EnvState): Promise<Verdict> {
  return graders((sb) => verifyPatch(sb, task, state));
}

export interface StableVerdict extends Verdict {
  /** The verdict differed between repeated runs; such a task is excluded. */
  flaky: boolean;
  runs: number;
}

/** Verifies a state `repeats` times; a task whose verdict varies is flaky. */
export async function verifyRepeated(graders: GraderLease, task: LoadedTask, state: EnvState, repeats: number): Promise<StableVerdict> {
  const verdicts = await Promise.all(Array.from({ length: repeats }, () => verifyState(graders, task, state)));
  const flaky = new Set(verdicts.map((v) => v.resolved)).size > 1;
  return {
    ...verdicts[0]!,
    flaky,
    runs: repeats,
    ...(flaky ? { reason: `verdict varied over ${repeats} runs: ${verdicts.map((v) => (v.resolved ? 'pass' : 'fail')).join(', ')}` } : {}),
  };
}
