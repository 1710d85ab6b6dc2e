/**
 * One Terminal-Bench episode, in the loop and transcript of an ASAP episode: the prompt is
 * the task's instruction, the tools, and the reference prefix; each step the model writes
 * thinking and one action (one completion, stopped at the action's end); the harness runs it
 * in the task's container and appends the screen (terminus) or the output (bash) as the
 * `<observation>`, until `<submit/>`, the step limit, the task's agent timeout, or a second
 * failure of one kind.
 *
 * Minimal recovery, at most once per failure type (mission.md):
 * - no parsable action (or the other profile's tool): a format hint, then the episode ends;
 * - `<submit/>` before the model has acted at all: rejected with a hint, then accepted;
 * - the previous step's action again: suppressed with a hint, then the episode ends.
 * (A terminal action repeated is often right — `C-c`, waiting on a build — so the repeat
 * rule counts only a `bash` command or keystrokes that end in Enter.)
 *
 * The agent timeout (task.toml [agent] timeout_sec) counts the time the environment took —
 * commands and waits — not the model's: the model's speed is the serving hardware's, and the
 * probe must not rank checkpoints by it.
 */
import { completeStep } from '../backends/step-completion.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { asapFormat, transcriptText } from '../formats/asap-transcripts.ts';
import { renderTask } from '../formats/md-xml.ts';
import {
  exampleAction,
  type FoundTerminalAction,
  findTerminalAction,
  renderTerminalAction,
  TERMINAL_STOPS,
  type TerminalAction,
  type TerminalProfile,
} from './actions.ts';
import type { TerminalContainer } from './container.ts';

export const TERMINAL_TERMINATIONS = [
  'submitted',
  'submitted_unacted',
  'step_limit',
  'agent_timeout',
  'repeated_action',
  'format_error',
] as const;
export type TerminalTermination = (typeof TERMINAL_TERMINATIONS)[number];

export type TerminalOutcome =
  | 'executed'
  | 'format_error'
  | 'repeat_suppressed'
  | 'submit_rejected'
  | 'submitted'
  | 'submitted_unacted'
  | 'repeated_action'
  | 'format_ended';

export interface TerminalStep {
  index: number;
  /** The model's step as written, cut where its action ends (all of it when it has none). */
  completion: string;
  finish: 'action' | 'stop' | 'length' | 'eos' | 'error';
  tokens: number;
  action: TerminalAction | null;
  error: string | null;
  outcome: TerminalOutcome;
  /** The screen or the output (or a hint); null on the step that ended the episode. */
  observation: string | null;
  /** A `bash` command's exit status, and whether it ran past the action timeout. */
  exitCode: number | null;
  timedOut: boolean;
  modelMs: number;
  envMs: number;
}

export interface TerminalEpisodeSettings {
  profile: TerminalProfile;
  maxSteps: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  seed: number;
  /** A `bash` command's limit, and how long a replayed prefix step may take to finish. */
  actionTimeoutMs: number;
  /** The task's [agent] timeout_sec, in ms of environment time. */
  agentTimeoutMs: number;
  /** The episode, as messages about the server's answers name it. */
  label?: string;
}

/** The transcript format of these episodes: ASAP's md+xml, with the terminal tools as actions. */
export const MD_XML = asapFormat('md+xml');

export const TERMINAL_HINTS = {
  format: (error: string, profile: TerminalProfile) =>
    `Format error: ${error}. Think in prose, then end the step with exactly one action, for example:\n${exampleAction(profile)}\nor <submit/> when the task is done.`,
  tool: (profile: TerminalProfile) =>
    profile === 'terminus'
      ? 'Only <keystrokes> and <submit/> are available here: type commands into the terminal with <keystrokes>.'
      : 'Only <bash> and <submit/> are available here: run commands with <bash>.',
  submit: 'You have not done anything yet. Work on the task in the terminal, then submit.',
  repeat: 'You just ran this exact command and its result will not change. Try a different approach.',
} as const;

/** The task block: the instruction as published, and the tools of the profile. */
export function terminalTask(instruction: string, profile: TerminalProfile): string {
  const tools =
    profile === 'terminus'
      ? [
          'You are working in a Linux terminal. Each step, think, then take exactly one action:',
          '- <keystrokes duration="SECONDS">TEXT</keystrokes> types TEXT into the shell (a line break is Enter; C-c alone sends Ctrl-C) and shows the screen after SECONDS (default 1);',
          '- <submit/> ends the task when it is done.',
        ]
      : [
          'You are working in a Linux shell. Each step, think, then take exactly one action:',
          '- <bash>COMMAND</bash> runs COMMAND in a fresh shell in the working directory and shows its output;',
          '- <submit/> ends the task when it is done.',
        ];
  return renderTask([...tools, '', instruction.trim()].join('\n'));
}

export type TerminalDecision =
  | { kind: 'execute'; action: Exclude<TerminalAction, { kind: 'submit' }> }
  | { kind: 'hint'; outcome: 'format_error' | 'repeat_suppressed' | 'submit_rejected'; message: string }
  | { kind: 'end'; outcome: 'submitted' | 'submitted_unacted' | 'repeated_action' | 'format_ended'; termination: TerminalTermination };

const allowed = (profile: TerminalProfile, action: TerminalAction) =>
  action.kind === 'submit' || (profile === 'terminus' ? action.kind === 'keystrokes' : action.kind === 'bash');

/** Whether running the action twice in a row is a loop rather than a wait or an interrupt. */
const repeatable = (action: TerminalAction) => action.kind === 'bash' || (action.kind === 'keystrokes' && action.keys.endsWith('\n'));

/** What the harness does with a completion, given the steps before it (pure). */
export function decideTerminal(history: readonly TerminalStep[], found: FoundTerminalAction, profile: TerminalProfile): TerminalDecision {
  const hinted = (outcome: TerminalOutcome) => history.some((s) => s.outcome === outcome);
  const formatEnd = { kind: 'end', outcome: 'format_ended', termination: 'format_error' } as const;
  if (!found.ok)
    return hinted('format_error')
      ? formatEnd
      : { kind: 'hint', outcome: 'format_error', message: TERMINAL_HINTS.format(found.error, profile) };
  const { action } = found;
  if (!allowed(profile, action))
    return hinted('format_error') ? formatEnd : { kind: 'hint', outcome: 'format_error', message: TERMINAL_HINTS.tool(profile) };
  if (action.kind === 'submit') {
    if (history.some((s) => s.outcome === 'executed')) return { kind: 'end', outcome: 'submitted', termination: 'submitted' };
    return hinted('submit_rejected')
      ? { kind: 'end', outcome: 'submitted_unacted', termination: 'submitted_unacted' }
      : { kind: 'hint', outcome: 'submit_rejected', message: TERMINAL_HINTS.submit };
  }
  const previous = history.at(-1);
  if (
    repeatable(action) &&
    previous?.action &&
    (previous.outcome === 'executed' || previous.outcome === 'repeat_suppressed') &&
    JSON.stringify(previous.action) === JSON.stringify(action)
  )
    return hinted('repeat_suppressed')
      ? { kind: 'end', outcome: 'repeated_action', termination: 'repeated_action' }
      : { kind: 'hint', outcome: 'repeat_suppressed', message: TERMINAL_HINTS.repeat };
  return { kind: 'execute', action };
}

/** One step of text as the model would have written it (for prefix steps). */
export function writtenStep(thought: string, action: TerminalAction): string {
  return `${thought.trim()}\n${renderTerminalAction(action)}`;
}

/** The transcript so far (prefix text, then the steps), ending with the cue for the next step. */
export function terminalTranscript(prefixText: string, steps: ReadonlyArray<Pick<TerminalStep, 'completion' | 'observation'>>): string {
  return transcriptText(prefixText, steps, MD_XML) + MD_XML.cue;
}

/** Runs one action in the container: the screen (terminus) or the output (bash). */
export async function runTerminalAction(
  container: TerminalContainer,
  action: Exclude<TerminalAction, { kind: 'submit' }>,
  actionTimeoutMs: number,
): Promise<{ observation: string; exitCode: number | null; timedOut: boolean }> {
  if (action.kind === 'keystrokes')
    return { observation: await container.sendKeys(action.keys, action.duration), exitCode: null, timedOut: false };
  const ran = await container.runCommand(action.command, actionTimeoutMs);
  const observation = ran.timedOut
    ? `${ran.output}\n[the command timed out after ${actionTimeoutMs / 1000} s and was killed]`
    : `${ran.output.replace(/\n+$/, '')}${ran.exitCode === 0 ? '' : `\n[exit code ${ran.exitCode}]`}`;
  return { observation, exitCode: ran.exitCode, timedOut: ran.timedOut };
}

export interface TerminalEpisodeResult {
  steps: TerminalStep[];
  termination: TerminalTermination;
}

export async function runTerminalEpisode(
  backend: CompletionBackend,
  container: TerminalContainer,
  prefixText: string,
  settings: TerminalEpisodeSettings,
  onStep: (step: TerminalStep) => Promise<void> = async () => {},
): Promise<TerminalEpisodeResult> {
  const steps: TerminalStep[] = [];
  let envMs = 0;
  while (steps.length < settings.maxSteps) {
    if (envMs >= settings.agentTimeoutMs) return { steps, termination: 'agent_timeout' };
    const completion = await completeStep(backend, terminalTranscript(prefixText, steps), settings, steps.length, {
      stops: TERMINAL_STOPS,
      find: findTerminalAction,
      continueAfterStop: true,
    });
    const decision = decideTerminal(steps, completion.found, settings.profile);
    const step: TerminalStep = {
      index: steps.length,
      completion: completion.text,
      finish: completion.finish,
      tokens: completion.tokens,
      action: completion.found.ok ? completion.found.action : null,
      error:
        completion.serverError ??
        (completion.found.ok
          ? allowed(settings.profile, completion.found.action)
            ? null
            : `the ${completion.found.action.kind} tool is not in the ${settings.profile} profile`
          : completion.found.error),
      outcome: decision.kind === 'execute' ? 'executed' : decision.outcome,
      observation: decision.kind === 'hint' ? decision.message : null,
      exitCode: null,
      timedOut: false,
      modelMs: completion.modelMs,
      envMs: 0,
    };
    if (decision.kind === 'execute') {
      const started = performance.now();
      const ran = await runTerminalAction(container, decision.action, settings.actionTimeoutMs);
      step.envMs = performance.now() - started;
      envMs += step.envMs;
      Object.assign(step, ran);
    }
    steps.push(step);
    await onStep(step);
    if (decision.kind === 'end') return { steps, termination: decision.termination };
  }
  return { steps, termination: 'step_limit' };
}

export interface TerminalBehaviour {
  /** Actions run in the container. */
  actions: number;
  parsable_turns: number;
  submitted: boolean;
  /** `bash` commands that exited non-zero or timed out, as a share of those run. */
  failed_commands: number;
  /** Ctrl-C and other lone keys sent (terminus): the model interrupting or steering the shell. */
  key_presses: number;
}

export function terminalBehaviour(steps: readonly TerminalStep[]): TerminalBehaviour {
  const executed = steps.filter((s) => s.outcome === 'executed' && s.action);
  const commands = executed.filter((s) => s.action!.kind === 'bash');
  return {
    actions: executed.length,
    parsable_turns: steps.length ? steps.filter((s) => s.action !== null).length / steps.length : 0,
    submitted: steps.some((s) => s.outcome === 'submitted' || s.outcome === 'submitted_unacted'),
    failed_commands: commands.length ? commands.filter((s) => s.exitCode !== 0 || s.timedOut).length / commands.length : 0,
    key_presses: executed.filter((s) => s.action!.kind === 'keystrokes' && !(s.action as { keys: string }).keys.includes('\n')).length,
  };
}
