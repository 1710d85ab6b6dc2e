/**
 * The one ASAP episode loop, as plainly as mini-swe-agent's: each step the model writes
 * thinking and one action (one completion, stopped at the action's end: step-completion.ts),
 * recovery decides what happens with it (recovery.ts), the environment runs it and the
 * observation is appended, until the final action, the step limit, the environment's own
 * budget, or a second failure of one kind. Every environment — SWE, Terminal-Bench, deep
 * research — runs its episodes through this function; what differs is the environment.
 */
import { completeStep, type FoundAction } from '../backends/step-completion.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { decide, type EnvironmentAction, type FoundStep, type RecoveryRules, type SharedOutcome, stepError } from './recovery.ts';

/** What every step of every environment records. */
export interface StepRecord<A, O extends string> {
  index: number;
  /** The model's step as written, cut where its action ends (all of it when it has none). */
  completion: string;
  /** `action`: a complete action was found; otherwise the backend's finish reason. */
  finish: 'action' | 'stop' | 'length' | 'eos' | 'error';
  tokens: number;
  action: A | null;
  /** Why the step has no usable action. */
  error: string | null;
  outcome: O | SharedOutcome;
  /** What the harness appended (output, screen, results, or a hint); null on the step that ended the episode. */
  observation: string | null;
  modelMs: number;
}

/** What a step that ran a command in a sandbox adds (SWE's tools, Terminal-Bench's bash): its exit status, and whether it ran past the action timeout. */
export interface CommandRun {
  /** Exit status of the command (SWE's editor exits 1 when it rejects a call; null where nothing exited). */
  exitCode: number | null;
  timedOut: boolean;
}

/** An action found in a completion, as both the completion's stop rule and recovery read it. */
export type FoundInText<A> = FoundAction & FoundStep<A>;

/** One episode of an environment, prepared: its instance is ready and its prefix replayed. */
export interface EpisodeEnvironment<A extends EnvironmentAction, O extends string, S extends StepRecord<A, O>> {
  rules: RecoveryRules<A, O>;
  /** The prompt for the next step: the task, the prefix and the steps so far, ending with the cue. */
  prompt(steps: readonly S[]): string;
  /** Where a step's completion stops and how its action is found. */
  completion: { stops: readonly string[]; find(text: string): FoundInText<A>; continueAfterStop: boolean };
  /** The fields of a step that ran nothing (they carry the state before it). */
  idle(steps: readonly S[]): Omit<S, keyof StepRecord<A, O>>;
  /** Runs the action and observes: the fields it sets on its step (at least `observation`). */
  execute(action: A, steps: readonly S[]): Promise<Partial<S> & { observation: string }>;
  /** The termination where the environment's own budget is spent before the next step (Terminal-Bench's agent timeout). */
  spent?(steps: readonly S[]): string | null;
}

/** How each step is drawn. */
export interface LoopSettings {
  maxSteps: number;
  /** New tokens per step. */
  maxTokens: number;
  temperature: number;
  topP: number;
  /** This episode's seed (the run's seed, instance and run index mixed). */
  seed: number;
  /** The episode, as messages about the server's answers name it. */
  label?: string;
}

export interface LoopResult<S> {
  steps: S[];
  termination: string;
}

/** Runs one episode from its prepared state to its end; `onStep` sees every step before the next starts. */
export async function runEpisodeLoop<A extends EnvironmentAction, O extends string, S extends StepRecord<A, O>>(
  env: EpisodeEnvironment<A, O, S>,
  backend: CompletionBackend,
  settings: LoopSettings,
  onStep: (step: S) => Promise<void> = async () => {},
): Promise<LoopResult<S>> {
  const steps: S[] = [];
  while (steps.length < settings.maxSteps) {
    const spent = env.spent?.(steps);
    if (spent) return { steps, termination: spent };
    const completion = await completeStep(backend, env.prompt(steps), settings, steps.length, env.completion);
    const found = completion.found;
    const decision = decide(env.rules, steps, found);
    const step = {
      index: steps.length,
      completion: completion.text,
      finish: completion.finish,
      tokens: completion.tokens,
      action: found.ok ? found.action : null,
      error: completion.serverError ?? stepError(env.rules, found),
      outcome: decision.kind === 'execute' ? 'executed' : decision.outcome,
      observation: decision.kind === 'hint' ? decision.message : null,
      ...env.idle(steps),
      modelMs: completion.modelMs,
    } as S;
    if (decision.kind === 'execute') Object.assign(step, await env.execute(decision.action, steps));
    steps.push(step);
    await onStep(step);
    if (decision.kind === 'end') return { steps, termination: decision.termination };
  }
  return { steps, termination: 'step_limit' };
}
