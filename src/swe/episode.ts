/**
 * One SWE episode as an environment of the one ASAP loop (loop.ts): the prompt is the task
 * and the reference prefix; each step the model writes thinking and one action, the harness
 * runs it in the jailed sandbox and appends the observation, until `<submit/>`, the step
 * limit, or a second failure of one kind (recovery.ts). Having acted means having changed a
 * source file: `<submit/>` before that is rejected once, then accepted as an empty patch.
 *
 * A killed episode is run again from its start (run.ts): what its commands left in /tmp is
 * not part of the saved steps.
 */
import type { CompletionBackend } from '../backends/types.ts';
import { runAction, readToolState } from '../sandbox/run-action.ts';
import { treeDiff } from '../sandbox/git-state.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { normalizeMdXml } from '../formats/md-xml-format.ts';
import { type Action, renderAction } from '../formats/md-xml.ts';
import { type AsapFormat, type Extracted, transcriptText } from '../formats/asap-transcripts.ts';
import { sourceChanges } from './patch.ts';
import { allowsAction, type ToolProfile } from './profiles.ts';
import {
  type CommandRun,
  type EpisodeEnvironment,
  type FoundInText,
  type LoopSettings,
  runEpisodeLoop,
  type StepRecord,
} from '../asap/loop.ts';
import { decide as recover, type Decision as RecoveryDecision, type RecoveryRules, type SharedOutcome } from '../asap/recovery.ts';

export const TERMINATIONS = ['submitted', 'submitted_empty', 'step_limit', 'repeated_action', 'format_error'] as const;
export type Termination = (typeof TERMINATIONS)[number];

/** The final action's outcomes in SWE episodes: accepted, rejected (no source file changed yet), accepted anyway. */
type SweOutcome = 'submitted' | 'submit_rejected' | 'submitted_empty';

/** What the harness did with one model step. */
export type StepOutcome = SweOutcome | SharedOutcome;

export interface EpisodeStep extends StepRecord<Action, SweOutcome>, CommandRun {
  /** Cumulative working-tree patch after the step. */
  patch: string;
  /** Editor state after the step (for resuming). */
  toolState: string | null;
  sandboxMs: number;
}

export interface EpisodeSettings extends LoopSettings {
  format: AsapFormat;
  profile: ToolProfile;
  actionTimeoutMs: number;
}

export const HINTS = {
  format: (error: string, format: AsapFormat, profile: ToolProfile) =>
    `Format error: ${error}. Think in prose, then end the step with exactly one action, for example:\n${format.renderStep({ thought: '…', action: { kind: 'bash', command: 'ls' } })}\n${profile === 'editor' ? 'Edit files with the str_replace_editor action; ' : ''}submit with ${format.renderStep({ thought: '', action: { kind: 'submit' } }).trim()} when you are done.`,
  tool: (tool: string) => `The ${tool} tool is not available here. Use bash commands to read and edit files.`,
  submit: 'You have not changed any source file yet. Edit the source code to resolve the task, then submit.',
  repeat: 'You just ran this exact action and its result will not change. Try a different approach.',
} as const;

/** The rules of recovery for SWE episodes; having acted is having changed a source file (the patch is read as it is now). */
function sweRules(format: AsapFormat, profile: ToolProfile, patch: () => string): RecoveryRules<Action, SweOutcome> {
  return {
    isFinal: (action) => action.kind === 'submit',
    offers: (action) => allowsAction(profile, action),
    profile,
    repeatable: () => true,
    hasActed: () => sourceChanges(patch()).length > 0,
    names: { accepted: 'submitted', rejected: 'submit_rejected', unacted: 'submitted_empty' },
    hints: {
      format: (error) => HINTS.format(error, format, profile),
      tool: (action) => HINTS.tool(action.kind),
      final: HINTS.submit,
      repeat: HINTS.repeat,
    },
  };
}

/** A transcript format's extraction, as the loop reads a found action. */
function foundIn(format: AsapFormat): (text: string) => FoundInText<Action> {
  return (text) => {
    const extracted: Extracted = format.extract(text);
    return extracted.ok ? { ok: true, action: extracted.step.action, end: extracted.end } : extracted;
  };
}

export type Decision = RecoveryDecision<Action, SweOutcome>;

/** What the harness does with a completion, given the steps before it and the current patch. */
export function decide(
  history: readonly EpisodeStep[],
  extracted: Extracted,
  patch: string,
  format: AsapFormat,
  profile: ToolProfile,
): Decision {
  const found = extracted.ok ? ({ ok: true, action: extracted.step.action } as const) : extracted;
  return recover(
    sweRules(format, profile, () => patch),
    history,
    found,
  );
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

/** The SWE environment of one episode: the sandbox at the prefix's state, and the patch as the steps leave it. */
export function sweEpisode(ctx: EpisodeContext, settings: EpisodeSettings): EpisodeEnvironment<Action, SweOutcome, EpisodeStep> {
  let patch = ctx.prefixState.patch;
  const { format, profile, actionTimeoutMs } = settings;
  return {
    rules: sweRules(format, profile, () => patch),
    prompt: (steps) => transcriptText(ctx.prefixText, steps, format) + format.cue,
    completion: { stops: format.stops, find: foundIn(format), continueAfterStop: format.continueAfterStop },
    idle: (steps) => ({
      exitCode: null,
      timedOut: false,
      patch,
      toolState: steps.at(-1)?.toolState ?? ctx.prefixState.toolState,
      sandboxMs: 0,
    }),
    async execute(action, steps) {
      const started = performance.now();
      const ran = await runAction(ctx.sandbox, normalizeMdXml(action, renderAction(action)), actionTimeoutMs);
      patch = await treeDiff(ctx.sandbox, ctx.baseCommit);
      return {
        observation: ran.timedOut ? `${ran.output}\n[the command timed out after ${actionTimeoutMs / 1000} s and was killed]` : ran.output,
        exitCode: ran.exitCode,
        timedOut: ran.timedOut,
        patch,
        toolState:
          action.kind === 'str_replace_editor' ? await readToolState(ctx.sandbox) : (steps.at(-1)?.toolState ?? ctx.prefixState.toolState),
        sandboxMs: performance.now() - started,
      };
    },
  };
}

/** Runs one episode, from the prefix's state, to its end. */
export async function runEpisode(ctx: EpisodeContext, settings: EpisodeSettings): Promise<EpisodeResult> {
  const result = await runEpisodeLoop(sweEpisode(ctx, settings), ctx.backend, settings, ctx.onStep);
  return { steps: result.steps, termination: result.termination as Termination };
}
