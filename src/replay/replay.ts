/**
 * Replay a successful trajectory in the task's environment and find the decisive step T*:
 * the first step whose cumulative patch flips the task's tests from failing to passing.
 *
 * Steps run in order in one sandbox; after each, the working tree is diffed (edits are
 * detected, never guessed from the command). Every distinct state is then verified in
 * its own fresh sandbox restored to it, in parallel, with verdicts cached by patch hash.
 * The base state must fail and the final state must pass, stably over R runs.
 */
import { createHash } from 'node:crypto';
import { nativeFormat } from '../formats/registry.ts';
import { SWE_AGENT_TOOL } from '../formats/swe-agent.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { Trajectory, TrajectoryAction } from '../schema/trajectory.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { SandboxPool, type SandboxFactory } from '../sandbox/pool.ts';
import {
  listNames,
  unresolvedCauses,
  verifyRepeated,
  verifyState,
  type StableVerdict,
  type Tampering,
  type Verdict,
} from '../verify/verifier.ts';
import { drift } from './drift.ts';
import { readToolState, runAction } from '../sandbox/run-action.ts';
import { placeTask, type ChosenWorkdir } from './workdir.ts';

export interface ReplayStep {
  index: number;
  action: TrajectoryAction;
  /** The step changed the working tree. */
  edits: boolean;
  /** Verdict of the cumulative patch after this step; null when the step did not edit. */
  resolved: boolean | null;
  /** Changes the verifier dropped from that patch as tampering; null when the step did not edit. */
  tampering: Tampering[] | null;
  /** The verdict of the state after this step (per-test results, status, reason); null when the step did not edit. */
  verdict: Verdict | null;
  exitCode: number;
  timedOut: boolean;
  output: string;
  /** Distance from the recorded observation (0 identical, 1 nothing shared); null when none recorded. */
  drift: number | null;
  /** Cumulative patch before this step (the state a probe at this step restores). */
  patchBefore: string;
  patchAfter: string;
  /** State of the in-sandbox editors before this step (open file…), when the trajectory uses them. */
  toolStateBefore: string | null;
}

/** A step as run, before its state is verified. */
type RanStep = Omit<ReplayStep, 'resolved' | 'tampering' | 'verdict'>;

/** Listed tests the base state's log never mentions. */
export interface MissingAtBase {
  failToPass: string[];
  passToPass: string[];
}

/** What the replay says once about tests the base state's log never mentions. */
export function describeMissingAtBase(m: MissingAtBase): string {
  const why = [
    m.passToPass.length
      ? `${m.passToPass.length} PASS_TO_PASS, which should pass here: the task names tests its environment does not produce, and no trajectory can make them pass`
      : '',
    m.failToPass.length
      ? `${m.failToPass.length} FAIL_TO_PASS, which the base may not collect yet, or the environment does not produce under those names`
      : '',
  ]
    .filter(Boolean)
    .join('; ');
  return `not in the base state's log: ${why}: ${listNames([...m.passToPass, ...m.failToPass])}`;
}

export interface ReplayResult {
  task: string;
  trajectory: string;
  format: Trajectory['format'];
  sandbox: string;
  steps: ReplayStep[];
  decisiveStep: { index: number; action: string } | null;
  /** Why the trajectory cannot yield a probe (base passes, final fails, flaky…); null when accepted. */
  rejected: string | null;
  base: Verdict;
  /**
   * Listed tests not in the base state's log; null when there are none (or the base could
   * not be graded). A PASS_TO_PASS test here is one the task names but its environment does
   * not produce: no trajectory can make it pass, so every final state is graded as not
   * passing it (as SWE-bench grades it), and the rejection says so.
   */
  missingAtBase: MissingAtBase | null;
  final: StableVerdict | null;
  /** Distinct states verified (each once, thanks to the cache) and total test runs. */
  verifierRuns: { states: number; runs: number };
  meanDrift: number | null;
  /** Where the repository was placed, and the trajectory's absolute paths that lie outside it. */
  workdir: ChosenWorkdir;
}

export interface ReplayOptions {
  openSandbox: SandboxFactory;
  sandboxName: string;
  /** Sandboxes verifying states at once (each restored to its state before a run; none the one the steps ran in). */
  concurrency?: number;
  /** Times the final state is verified to detect flakiness. */
  repeats?: number;
  /** Time limit of one replayed action. */
  actionTimeoutMs?: number;
  /** Sandboxes to use (and leave open, for the caller's further work); else a pool of its own. */
  pool?: SandboxPool;
  /** Where to place the repository (`--workdir`), over the one the trajectory shows and the task's. */
  workdir?: string;
}

const hash = (patch: string) => createHash('sha256').update(patch).digest('hex');

/** Runs the actions; returns per-step results with the cumulative patch around each. */
async function runSteps(sb: Sandbox, trajectory: Trajectory, actionTimeoutMs?: number): Promise<RanStep[]> {
  const steps: RanStep[] = [];
  let before = '';
  const statefulTools = trajectory.steps.some((s) => s.action.tool === SWE_AGENT_TOOL || s.action.tool === 'str_replace_editor');
  let toolState: string | null = null;
  for (const step of trajectory.steps) {
    const toolStateBefore = toolState;
    const result = await runAction(sb, step.action, actionTimeoutMs);
    if (statefulTools) toolState = await readToolState(sb);
    const after = await sb.diff();
    steps.push({
      index: step.index,
      action: step.action,
      edits: after !== before,
      exitCode: result.exitCode,
      timedOut: result.timedOut,
      output: result.output,
      drift:
        step.observation === null || step.action.tool === 'submit'
          ? null
          : drift(result.output, nativeFormat(trajectory.format).recordedOutput(step.observation)),
      patchBefore: before,
      patchAfter: after,
      toolStateBefore,
    });
    before = after;
    if (step.action.kind === 'submit') break;
  }
  return steps;
}

export async function replayTrajectory(trajectory: Trajectory, taskAsGiven: LoadedTask, options: ReplayOptions): Promise<ReplayResult> {
  // The trajectory's absolute paths must find the repository where it ran (a given pool was opened there: placeTask).
  const { task, workdir } = placeTask(trajectory, taskAsGiven, options.workdir);
  const concurrency = options.concurrency ?? 4;
  const repeats = options.repeats ?? 3;
  const pool = options.pool ?? new SandboxPool(options.openSandbox, task, concurrency);
  try {
    const ran = await pool.lease((sb) => runSteps(sb, trajectory, options.actionTimeoutMs));
    return { ...(await judge(ran, trajectory, task, pool, { ...options, repeats })), workdir };
  } finally {
    if (!options.pool) await pool.close();
  }
}

/** Verifies every distinct state the replay produced and finds T*. */
async function judge(
  ran: RanStep[],
  trajectory: Trajectory,
  task: LoadedTask,
  pool: SandboxPool,
  options: ReplayOptions & { repeats: number },
): Promise<Omit<ReplayResult, 'workdir'>> {
  const { repeats } = options;
  // Distinct states: the base and every cumulative patch an editing step produced.
  const patches = new Map<string, string>([[hash(''), '']]);
  for (const s of ran) if (s.edits) patches.set(hash(s.patchAfter), s.patchAfter);
  const finalPatch = ran.at(-1)?.patchAfter ?? '';
  const toVerify = [...patches.entries()].filter(([h]) => h !== hash(finalPatch) || finalPatch === '');
  const verdicts = new Map<string, Verdict>();
  const state = (patch: string) => ({ base_commit: task.base_commit, patch });
  const [final] = await Promise.all([
    finalPatch === '' ? Promise.resolve(null) : verifyRepeated(pool.graders, task, state(finalPatch), repeats),
    Promise.all(
      toVerify.map(async ([h, patch]) => {
        verdicts.set(h, await verifyState(pool.graders, task, state(patch)));
      }),
    ),
  ]);
  if (final) verdicts.set(hash(finalPatch), final);
  const base = verdicts.get(hash(''))!;

  const steps: ReplayStep[] = ran.map((s) => {
    const verdict = s.edits ? verdicts.get(hash(s.patchAfter))! : null;
    return { ...s, resolved: verdict?.resolved ?? null, tampering: verdict?.tampering ?? null, verdict };
  });
  const decisive = steps.find((s) => s.resolved === true);
  const missingAtBase =
    base.status === 'ok' && base.failToPass.missing.length + base.passToPass.missing.length > 0
      ? { failToPass: base.failToPass.missing, passToPass: base.passToPass.missing }
      : null;
  const rejected =
    base.status !== 'ok'
      ? `base state could not be graded: ${base.reason}`
      : base.resolved
        ? 'base state already passes: nothing for the trajectory to fix'
        : !final
          ? 'the trajectory never changes the working tree'
          : final.flaky
            ? `final state is flaky: ${final.reason}`
            : final.status !== 'ok'
              ? `final state could not be graded: ${final.reason}`
              : !final.resolved
                ? `final state does not pass: ${unresolvedCauses(final, base)}`
                : null;
  const drifts = steps.map((s) => s.drift).filter((d): d is number => d !== null);
  return {
    task: task.instance_id,
    trajectory: trajectory.source,
    format: trajectory.format,
    sandbox: options.sandboxName,
    steps,
    decisiveStep: rejected || !decisive ? null : { index: decisive.index, action: decisive.action.text },
    rejected,
    base,
    missingAtBase,
    final,
    verifierRuns: { states: patches.size, runs: toVerify.length + (final ? repeats : 0) },
    meanDrift: drifts.length ? drifts.reduce((a, b) => a + b, 0) / drifts.length : null,
  };
}
