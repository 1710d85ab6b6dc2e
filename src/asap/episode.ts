/**
 * One ASAP episode, as plainly as mini-swe-agent's loop: the prompt is the task and the
 * reference prefix; each step the model writes thinking and one action (one completion,
 * stopped at the action's end), the harness runs it in the jailed sandbox and appends the
 * observation, until `<submit/>`, the step limit, or a second failure of one kind.
 *
 * Minimal recovery (mission.md), at most once per failure type:
 * - no parsable action (or a tool the profile lacks): a format hint, then the episode ends;
 * - `<submit/>` with no source file changed: rejected with a hint, then accepted as an empty patch;
 * - the previous step's action again: suppressed with a hint, then the episode ends.
 * The harness never inserts task-specific actions or edits.
 *
 * `decide` is pure (history + completion → what happens), so every branch is testable
 * without a model. A killed episode is run again from its start (run.ts): what its
 * commands left in /tmp is not part of the saved steps.
 */
import type { CompletionBackend } from '../backends/types.ts';
import { completeStep as completeUntilAction } from '../backends/step-completion.ts';
import { runAction, readToolState } from '../sandbox/run-action.ts';
import { treeDiff } from '../sandbox/git-state.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { normalizeMdXml } from '../formats/md-xml-format.ts';
import { type Action, renderAction } from '../formats/md-xml.ts';
import { type AsapFormat, type Extracted, transcriptText } from '../formats/asap-transcripts.ts';
import { sourceChanges } from './patch.ts';
import { allowsAction, type ToolProfile } from './profiles.ts';

export const TERMINATIONS = ['submitted', 'submitted_empty', 'step_limit', 'repeated_action', 'format_error'] as const;
export type Termination = (typeof TERMINATIONS)[number];

/** What the harness did with one model step. */
export type StepOutcome =
  | 'executed'
  /** No parsable action, or a tool outside the profile: hinted once. */
  | 'format_error'
  | 'repeat_suppressed'
  | 'submit_rejected'
  /** The step that ended the episode. */
  | 'submitted'
  | 'submitted_empty'
  | 'repeated_action'
  | 'format_ended';

export interface EpisodeStep {
  index: number;
  /** The model's step as written, cut where its action ends (all of it when it has none). */
  completion: string;
  /** `action`: a complete action was found; otherwise the backend's finish reason. */
  finish: 'action' | 'stop' | 'length' | 'eos' | 'error';
  tokens: number;
  action: Action | null;
  /** Why the step has no usable action. */
  error: string | null;
  outcome: StepOutcome;
  /** What the harness appended (output or hint); null on the step that ended the episode. */
  observation: string | null;
  /** Exit status of an executed action (the editor exits 1 when it rejects a call). */
  exitCode: number | null;
  timedOut: boolean;
  /** Cumulative working-tree patch after the step. */
  patch: string;
  /** Editor state after the step (for resuming). */
  toolState: string | null;
  modelMs: number;
  sandboxMs: number;
}

export interface EpisodeSettings {
  format: AsapFormat;
  profile: ToolProfile;
  maxSteps: number;
  /** New tokens per step. */
  maxTokens: number;
  temperature: number;
  topP: number;
  /** This episode's seed (the run's seed, instance and run index mixed). */
  seed: number;
  actionTimeoutMs: number;
  /** The episode, as messages about the server's answers name it. */
  label?: string;
}

export const HINTS = {
  format: (error: string, format: AsapFormat, profile: ToolProfile) =>
    `Format error: ${error}. Think in prose, then end the step with exactly one action, for example:\n${format.renderStep({ thought: '…', action: { kind: 'bash', command: 'ls' } })}\n${profile === 'editor' ? 'Edit files with the str_replace_editor action; ' : ''}submit with ${format.renderStep({ thought: '', action: { kind: 'submit' } }).trim()} when you are done.`,
  tool: (tool: string) => `The ${tool} tool is not available here. Use bash commands to read and edit files.`,
  submit: 'You have not changed any source file yet. Edit the source code to resolve the task, then submit.',
  repeat: 'You just ran this exact action and its result will not change. Try a different approach.',
} as const;

export type Decision =
  | { kind: 'execute'; action: Action }
  | { kind: 'hint'; outcome: 'format_error' | 'repeat_suppressed' | 'submit_rejected'; message: string }
  | { kind: 'end'; outcome: 'submitted' | 'submitted_empty' | 'repeated_action' | 'format_ended'; termination: Termination };

const TERMINATION_OF = {
  submitted: 'submitted',
  submitted_empty: 'submitted_empty',
  repeated_action: 'repeated_action',
  format_ended: 'format_error',
} as const;

function sameAction(a: Action | null, b: Action): boolean {
  return a !== null && JSON.stringify(a) === JSON.stringify(b);
}

/** What the harness does with a completion, given the steps before it and the current patch. */
export function decide(
  history: readonly EpisodeStep[],
  extracted: Extracted,
  patch: string,
  format: AsapFormat,
  profile: ToolProfile,
): Decision {
  const end = (outcome: 'submitted' | 'submitted_empty' | 'repeated_action' | 'format_ended'): Decision => ({
    kind: 'end',
    outcome,
    termination: TERMINATION_OF[outcome],
  });
  const formatHinted = history.some((s) => s.outcome === 'format_error');
  if (!extracted.ok)
    return formatHinted
      ? end('format_ended')
      : { kind: 'hint', outcome: 'format_error', message: HINTS.format(extracted.error, format, profile) };
  const action = extracted.step.action;
  if (!allowsAction(profile, action))
    return formatHinted ? end('format_ended') : { kind: 'hint', outcome: 'format_error', message: HINTS.tool(action.kind) };
  if (action.kind === 'submit') {
    if (sourceChanges(patch).length > 0) return end('submitted');
    return history.some((s) => s.outcome === 'submit_rejected')
      ? end('submitted_empty')
      : { kind: 'hint', outcome: 'submit_rejected', message: HINTS.submit };
  }
  const previous = history.at(-1);
  if (previous && (previous.outcome === 'executed' || previous.outcome === 'repeat_suppressed') && sameAction(previous.action, action)) {
    return history.some((s) => s.outcome === 'repeat_suppressed')
      ? end('repeated_action')
      : { kind: 'hint', outcome: 'repeat_suppressed', message: HINTS.repeat };
  }
  return { kind: 'execute', action };
}

/** One completion call per step (backends/step-completion.ts), in the episode's transcript format. */
export function completeStep(backend: CompletionBackend, prompt: string, settings: EpisodeSettings, stepIndex: number) {
  const { format } = settings;
  return completeUntilAction(backend, prompt, settings, stepIndex, {
    stops: format.stops,
    find: (text) => format.extract(text),
    continueAfterStop: format.continueAfterStop,
  });
}

function stepError(extracted: Extracted, profile: ToolProfile): string | null {
  if (!extracted.ok) return extracted.error;
  const action = extracted.step.action;
  return allowsAction(profile, action) ? null : `the ${action.kind} tool is not in the ${profile} profile`;
}

export interface EpisodeResult {
  steps: EpisodeStep[];
  termination: Termination;
}

export interface EpisodeContext {
  backend: CompletionBackend;
  /** Jailed, network off, at the state after the prefix (or after the last saved step). */
  sandbox: Sandbox;
  baseCommit: string;
  /** Task text and the reference prefix, rendered in the episode's format. */
  prefixText: string;
  /** Working tree and editor state after the prefix, before any step. */
  prefixState: { patch: string; toolState: string | null };
  /** Called after every step, before the next one starts (the episode is saved there). */
  onStep: (step: EpisodeStep) => Promise<void>;
}

/** Runs one episode, from the prefix's state, to its end. */
export async function runEpisode(ctx: EpisodeContext, settings: EpisodeSettings): Promise<EpisodeResult> {
  const steps: EpisodeStep[] = [];
  let patch = ctx.prefixState.patch;
  while (steps.length < settings.maxSteps) {
    const index = steps.length;
    const prompt = transcriptText(ctx.prefixText, steps, settings.format) + settings.format.cue;
    const completion = await completeStep(ctx.backend, prompt, settings, index);
    const decision = decide(steps, completion.found, patch, settings.format, settings.profile);
    const step: EpisodeStep = {
      index,
      completion: completion.text,
      finish: completion.finish,
      tokens: completion.tokens,
      action: completion.found.ok ? completion.found.step.action : null,
      error: completion.serverError ?? stepError(completion.found, settings.profile),
      outcome: decision.kind === 'execute' ? 'executed' : decision.outcome,
      observation: null,
      exitCode: null,
      timedOut: false,
      patch,
      toolState: steps.at(-1)?.toolState ?? ctx.prefixState.toolState,
      modelMs: completion.modelMs,
      sandboxMs: 0,
    };
    if (decision.kind === 'hint') step.observation = decision.message;
    if (decision.kind === 'execute') {
      const started = performance.now();
      const ran = await runAction(ctx.sandbox, normalizeMdXml(decision.action, renderAction(decision.action)), settings.actionTimeoutMs);
      step.observation = ran.timedOut
        ? `${ran.output}\n[the command timed out after ${settings.actionTimeoutMs / 1000} s and was killed]`
        : ran.output;
      step.exitCode = ran.exitCode;
      step.timedOut = ran.timedOut;
      patch = await treeDiff(ctx.sandbox, ctx.baseCommit);
      step.patch = patch;
      if (decision.action.kind === 'str_replace_editor') step.toolState = await readToolState(ctx.sandbox);
      step.sandboxMs = performance.now() - started;
    }
    steps.push(step);
    await ctx.onStep(step);
    if (decision.kind === 'end') return { steps, termination: decision.termination };
  }
  return { steps, termination: 'step_limit' };
}
