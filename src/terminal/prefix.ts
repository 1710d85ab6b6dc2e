/**
 * The reference prefix of a terminal task: the first K steps of its solution (solve.sh
 * replayed step by step, solution.ts), run once in a fresh container to record what each
 * showed, rendered in the episode's transcript, the same for every checkpoint.
 *
 * A prefix must not solve the task for the model: it takes at most all but the last
 * solution step, and when the tests already pass after it, it is shortened a step at a
 * time until they fail (`shortened` says so). A task without solve.sh has no prefix.
 */
import type { TerminalProfile } from './actions.ts';
import { TerminalContainer } from './container.ts';
import { MD_XML, terminalTask, writtenStep } from './episode.ts';
import type { TerminalImage } from './image.ts';
import { readSolution, type SolutionStep } from './solution.ts';
import type { TerminalTask } from './task.ts';
import { transcriptText } from '../formats/asap-transcripts.ts';
import { TerminalPrefixSchema } from '../schema/episode-records.ts';
import { readRecordFile } from '../store/read-record.ts';

export interface TerminalPrefixStep extends SolutionStep {
  observation: string;
}

export interface TerminalPrefix {
  task: string;
  profile: TerminalProfile;
  /** Steps of solve.sh, and how many the prefix holds. */
  solutionSteps: number;
  steps: TerminalPrefixStep[];
  /** Why the prefix is shorter than asked, if it is. */
  shortened: string | null;
  /** Task block and the steps, as the model sees them. */
  text: string;
}

/** A prefix a run directory `root` kept (prefixes/<task>.<profile>.json), checked against its schema as it is read back. */
export function readTerminalPrefix(file: string, root: string): TerminalPrefix {
  return readRecordFile(file, TerminalPrefixSchema, { root, what: 'a Terminal-Bench reference prefix' });
}

/** Replays solution steps in a container; what each showed. */
export async function replaySteps(
  container: TerminalContainer,
  steps: readonly SolutionStep[],
  profile: TerminalProfile,
  timeoutMs: number,
): Promise<string[]> {
  const shown: string[] = [];
  for (const step of steps) {
    if (profile === 'terminus') shown.push(await container.typeCommand(step.command, timeoutMs));
    else {
      const r = await container.runCommand(step.command, timeoutMs);
      shown.push(`${r.output.replace(/\n+$/, '')}${r.exitCode === 0 ? '' : `\n[exit code ${r.exitCode}]`}`);
    }
  }
  return shown;
}

export function prefixStepAction(step: SolutionStep, profile: TerminalProfile) {
  return profile === 'terminus'
    ? ({ kind: 'keystrokes', keys: `${step.command}\n`, duration: 1 } as const)
    : ({ kind: 'bash', command: step.command } as const);
}

export function renderTerminalPrefix(task: TerminalTask, profile: TerminalProfile, steps: readonly TerminalPrefixStep[]): string {
  const written = steps.map((step) => ({
    completion: writtenStep(step.thought, prefixStepAction(step, profile)),
    observation: step.observation,
  }));
  return transcriptText(terminalTask(task.instruction, profile), written, MD_XML);
}

export async function buildTerminalPrefix(
  task: TerminalTask,
  image: TerminalImage,
  profile: TerminalProfile,
  wanted: number,
  timeoutMs: number,
): Promise<TerminalPrefix> {
  const solution = task.solution ? readSolution(task.solution) : [];
  let take = Math.min(wanted, Math.max(0, solution.length - 1));
  let shortened: string | null =
    take < wanted ? (solution.length === 0 ? 'the task has no solution/solve.sh' : `solve.sh has ${solution.length} steps`) : null;
  for (;;) {
    const steps = solution.slice(0, take);
    let observations: string[] = [];
    let solved = false;
    if (take > 0) {
      const container = await TerminalContainer.start(task, image);
      try {
        observations = await replaySteps(container, steps, profile, timeoutMs);
        solved = (await container.verify(task)).resolved;
      } finally {
        await container.close();
      }
    }
    if (!solved) {
      const prefixSteps = steps.map((s, i) => ({ ...s, observation: observations[i]! }));
      return {
        task: task.id,
        profile,
        solutionSteps: solution.length,
        steps: prefixSteps,
        shortened,
        text: renderTerminalPrefix(task, profile, prefixSteps),
      };
    }
    shortened = `the tests pass after ${take} solution steps`;
    take--;
  }
}
