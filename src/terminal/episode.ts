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
import type { CompletionBackend } from '../backends/types.ts';
import { type CommandRun, type EpisodeEnvironment, type LoopSettings, runEpisodeLoop, type StepRecord } from '../asap/loop.ts';
import { decide, type Decision, type RecoveryRules, type SharedOutcome } from '../asap/recovery.ts';
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

/** The final action's outcomes: accepted, rejected (nothing run yet), accepted anyway. */
type FinalOutcome = 'submitted' | 'submit_rejected' | 'submitted_unacted';
export type TerminalOutcome = FinalOutcome | SharedOutcome;

export interface TerminalStep extends StepRecord<TerminalAction, FinalOutcome>, CommandRun {
  envMs: number;
}

export interface TerminalEpisodeSettings extends LoopSettings {
  profile: TerminalProfile;
  /** A `bash` command's limit, and how long a replayed prefix step may take to finish. */
  actionTimeoutMs: number;
  /** The task's [agent] timeout_sec, in ms of environment time. */
  agentTimeoutMs: number;
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

export type TerminalDecision = Decision<TerminalAction, FinalOutcome>;

const offered = (profile: TerminalProfile, action: TerminalAction) =>
  action.kind === 'submit' || (profile === 'terminus' ? action.kind === 'keystrokes' : action.kind === 'bash');

/** Recovery's rules here: having acted is having run anything; a repeat is a loop only for a command or keys that end in Enter. */
function terminalRules(profile: TerminalProfile): RecoveryRules<TerminalAction, FinalOutcome> {
  return {
    isFinal: (action) => action.kind === 'submit',
    offers: (action) => offered(profile, action),
    profile,
    repeatable: (action) => action.kind === 'bash' || (action.kind === 'keystrokes' && action.keys.endsWith('\n')),
    hasActed: (history) => history.some((s) => s.outcome === 'executed'),
    names: { accepted: 'submitted', rejected: 'submit_rejected', unacted: 'submitted_unacted' },
    hints: {
      format: (error) => TERMINAL_HINTS.format(error, profile),
      tool: () => TERMINAL_HINTS.tool(profile),
      final: TERMINAL_HINTS.submit,
      repeat: TERMINAL_HINTS.repeat,
    },
  };
}

/** What the harness does with a completion, given the steps before it (pure). */
export function decideTerminal(history: readonly TerminalStep[], found: FoundTerminalAction, profile: TerminalProfile): TerminalDecision {
  return decide(terminalRules(profile), history, found);
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

/** The Terminal-Bench environment of one episode: the task's container with the prefix replayed, and the environment time spent. */
export function terminalEpisode(
  container: TerminalContainer,
  prefixText: string,
  settings: Pick<TerminalEpisodeSettings, 'profile' | 'actionTimeoutMs' | 'agentTimeoutMs'>,
): EpisodeEnvironment<TerminalAction, FinalOutcome, TerminalStep> {
  let envMs = 0;
  return {
    rules: terminalRules(settings.profile),
    prompt: (steps) => terminalTranscript(prefixText, steps),
    completion: { stops: TERMINAL_STOPS, find: findTerminalAction, continueAfterStop: true },
    idle: () => ({ exitCode: null, timedOut: false, envMs: 0 }),
    async execute(action) {
      const started = performance.now();
      const ran = await runTerminalAction(container, action as Exclude<TerminalAction, { kind: 'submit' }>, settings.actionTimeoutMs);
      const spent = performance.now() - started;
      envMs += spent;
      return { ...ran, envMs: spent };
    },
    spent: () => (envMs >= settings.agentTimeoutMs ? 'agent_timeout' : null),
  };
}

export async function runTerminalEpisode(
  backend: CompletionBackend,
  container: TerminalContainer,
  prefixText: string,
  settings: TerminalEpisodeSettings,
  onStep: (step: TerminalStep) => Promise<void> = async () => {},
): Promise<TerminalEpisodeResult> {
  const result = await runEpisodeLoop(terminalEpisode(container, prefixText, settings), backend, settings, onStep);
  return { steps: result.steps, termination: result.termination as TerminalTermination };
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
