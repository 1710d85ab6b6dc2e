/**
 * A new task record's tests, run once at its base state (`probe task`): a record whose
 * FAIL_TO_PASS already passes, or whose tests never run, is found when it is written rather
 * than as every trajectory "rejected" later. The lines returned say what the run found.
 */
import { InputError } from '../errors.ts';
import { openSandbox } from '../sandbox/open.ts';
import { freshSandboxes } from '../sandbox/pool.ts';
import type { SandboxKind } from '../settings/sandbox-kinds.ts';
import { loadTaskFile } from './load-task.ts';
import { listNames, notPassed, verifyState } from './verifier.ts';

/** What the base state's run says about the record; a problem that makes it useless is an InputError naming the field. */
export async function checkAtBase(file: string, sandbox: SandboxKind): Promise<string> {
  const [task] = await loadTaskFile(file);
  const base = await verifyState(
    freshSandboxes((t) => openSandbox(sandbox, t), task!),
    task!,
    { base_commit: task!.base_commit, patch: '' },
  );
  if (base.status !== 'ok') throw new InputError({ file, field: 'test_cmd' }, `the tests could not run at the base state: ${base.reason}`);
  if (base.resolved)
    throw new InputError({ file, field: 'FAIL_TO_PASS' }, 'the tests already pass at the base state: nothing for a trajectory to fix');
  if (base.failToPass.passed.length > 0)
    throw new InputError(
      { file, field: 'FAIL_TO_PASS' },
      `${listNames(base.failToPass.passed)} already pass at the base state (FAIL_TO_PASS lists tests the fix makes pass)`,
    );
  const lines = [`at the base state (${sandbox} sandbox, ${(base.durationMs / 1000).toFixed(1)} s):`];
  lines.push(
    `  FAIL_TO_PASS  ${base.failToPass.failed.length} failing as they should${base.failToPass.missing.length ? `, ${base.failToPass.missing.length} not in the log: ${listNames(base.failToPass.missing)} (check the test ids and test_cmd)` : ''}`,
  );
  const p2p = task!.PASS_TO_PASS.length;
  if (p2p > 0) {
    const bad = notPassed(base.passToPass);
    lines.push(
      `  PASS_TO_PASS  ${base.passToPass.passed.length} of ${p2p} passing${bad.length ? `; not passing: ${listNames(bad)} (a fix cannot make them pass: drop them)` : ''}`,
    );
  }
  return lines.join('\n');
}
