/**
 * One deep-research episode, in the loop and transcript of an ASAP episode: the prompt is
 * the task (the question and the tools); each step the model writes thinking and one
 * action (one completion, stopped at the action's end); the harness answers a search or an
 * open in `<observation>`, until `<answer>`, the step limit, or a second failure of a kind.
 *
 * Minimal recovery, at most once per failure type, as for SWE episodes (mission.md):
 * - no parsable action: a format hint, then the episode ends;
 * - an answer before any search or opened document: rejected once with a hint to search,
 *   then accepted (the counterpart of submitting with no source edit);
 * - the previous step's action again: suppressed with a hint, then the episode ends.
 */
import { completeStep } from '../backends/step-completion.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { asapFormat, transcriptText } from '../formats/asap-transcripts.ts';
import { renderTask } from '../formats/md-xml.ts';
import { type FoundResearchAction, findResearchAction, RESEARCH_STOPS, type ResearchAction, runResearchTool } from './actions.ts';
import type { ResearchQuery } from './corpus.ts';
import { gradeAnswer } from './grade.ts';
import type { ResearchIndex } from './search-index.ts';

export const RESEARCH_TERMINATIONS = ['answered', 'answered_unsearched', 'step_limit', 'repeated_action', 'format_error'] as const;
export type ResearchTermination = (typeof RESEARCH_TERMINATIONS)[number];

export type ResearchOutcome =
  | 'executed'
  | 'format_error'
  | 'repeat_suppressed'
  | 'answer_rejected'
  | 'answered'
  | 'answered_unsearched'
  | 'repeated_action'
  | 'format_ended';

export interface ResearchStep {
  index: number;
  /** The model's step as written, cut where its action ends (all of it when it has none). */
  completion: string;
  finish: 'action' | 'stop' | 'length' | 'eos' | 'error';
  tokens: number;
  action: ResearchAction | null;
  error: string | null;
  outcome: ResearchOutcome;
  /** What the harness appended (results, a page, a hint); null on the step that ended the episode. */
  observation: string | null;
  /** Documents the observation showed: a search's hits, the page opened (absent where nothing ran). */
  shown?: string[];
  modelMs: number;
}

export interface ResearchEpisodeSettings {
  maxSteps: number;
  /** New tokens per step. */
  maxTokens: number;
  temperature: number;
  topP: number;
  /** This episode's seed. */
  seed: number;
  /** Hits a search shows. */
  searchK: number;
  /** The episode, as messages about the server's answers name it. */
  label?: string;
}

/** The transcript format of these episodes: ASAP's md+xml, with the research tools as actions. */
const MD_XML = asapFormat('md+xml');

export const RESEARCH_HINTS = {
  format: (error: string) =>
    `Format error: ${error}. Think in prose, then end the step with exactly one action: <search>words</search>, <open doc="ID"/> or <answer>your answer</answer>.`,
  answer: 'You have not searched the documents yet. Search for the evidence first, then answer.',
  repeat: 'You just took this exact action and its result will not change. Try a different search or open another document.',
} as const;

/** The task block: the question and the tools, as the task of an ASAP transcript. */
export function researchTask(query: string, searchK: number): string {
  return renderTask(
    [
      'Answer the question below from a collection of documents. Each step, think, then take exactly one action:',
      `- <search>words</search> lists the ${searchK} best-matching documents with their ids and a snippet;`,
      '- <open doc="ID"/> shows a document (add page="2" for its next page);',
      '- <answer>your answer</answer> ends the task: give only the answer, as short as possible.',
      '',
      `Question: ${query}`,
    ].join('\n'),
  );
}

export type ResearchDecision =
  | { kind: 'execute'; action: Exclude<ResearchAction, { kind: 'answer' }> }
  | { kind: 'hint'; outcome: 'format_error' | 'repeat_suppressed' | 'answer_rejected'; message: string }
  | { kind: 'end'; outcome: 'answered' | 'answered_unsearched' | 'repeated_action' | 'format_ended'; termination: ResearchTermination };

/** What the harness does with a completion, given the steps before it (pure). */
export function decideResearch(history: readonly ResearchStep[], found: FoundResearchAction): ResearchDecision {
  const hinted = (outcome: ResearchOutcome) => history.some((s) => s.outcome === outcome);
  if (!found.ok)
    return hinted('format_error')
      ? { kind: 'end', outcome: 'format_ended', termination: 'format_error' }
      : { kind: 'hint', outcome: 'format_error', message: RESEARCH_HINTS.format(found.error) };
  const { action } = found;
  if (action.kind === 'answer') {
    if (history.some((s) => s.outcome === 'executed')) return { kind: 'end', outcome: 'answered', termination: 'answered' };
    return hinted('answer_rejected')
      ? { kind: 'end', outcome: 'answered_unsearched', termination: 'answered_unsearched' }
      : { kind: 'hint', outcome: 'answer_rejected', message: RESEARCH_HINTS.answer };
  }
  const previous = history.at(-1);
  if (
    previous?.action &&
    (previous.outcome === 'executed' || previous.outcome === 'repeat_suppressed') &&
    JSON.stringify(previous.action) === JSON.stringify(action)
  )
    return hinted('repeat_suppressed')
      ? { kind: 'end', outcome: 'repeated_action', termination: 'repeated_action' }
      : { kind: 'hint', outcome: 'repeat_suppressed', message: RESEARCH_HINTS.repeat };
  return { kind: 'execute', action };
}

/** The transcript so far, ending with the cue for the next step. */
export function researchTranscript(task: string, steps: readonly ResearchStep[]): string {
  return transcriptText(task, steps, MD_XML) + MD_XML.cue;
}

export interface ResearchEpisodeResult {
  steps: ResearchStep[];
  termination: ResearchTermination;
  /** The answer given (also one given before any search), or null. */
  answer: string | null;
  correct: boolean;
}

export async function runResearchEpisode(
  backend: CompletionBackend,
  index: ResearchIndex,
  query: ResearchQuery,
  settings: ResearchEpisodeSettings,
  onStep: (step: ResearchStep) => Promise<void> = async () => {},
): Promise<ResearchEpisodeResult> {
  const task = researchTask(query.query, settings.searchK);
  const steps: ResearchStep[] = [];
  while (steps.length < settings.maxSteps) {
    const completion = await completeStep(backend, researchTranscript(task, steps), settings, steps.length, {
      stops: RESEARCH_STOPS,
      find: findResearchAction,
      continueAfterStop: true,
    });
    const decision = decideResearch(steps, completion.found);
    const step: ResearchStep = {
      index: steps.length,
      completion: completion.text,
      finish: completion.finish,
      tokens: completion.tokens,
      action: completion.found.ok ? completion.found.action : null,
      error: completion.serverError ?? (completion.found.ok ? null : completion.found.error),
      outcome: decision.kind === 'execute' ? 'executed' : decision.outcome,
      observation: decision.kind === 'hint' ? decision.message : null,
      modelMs: completion.modelMs,
    };
    if (decision.kind === 'execute') {
      const ran = runResearchTool(index, decision.action, settings.searchK);
      step.observation = ran.observation;
      step.shown = ran.shown;
    }
    steps.push(step);
    await onStep(step);
    if (decision.kind === 'end') {
      const answer = step.action?.kind === 'answer' ? step.action.text : null;
      return { steps, termination: decision.termination, answer, correct: answer !== null && gradeAnswer(answer, query).correct };
    }
  }
  return { steps, termination: 'step_limit', answer: null, correct: false };
}

export interface ResearchBehaviour {
  searches: number;
  documents_opened: number;
  /** Whether a gold document was opened (or shown in a search's hits). */
  gold_opened: boolean;
  gold_seen: boolean;
  answered: boolean;
  parsable_turns: number;
}

/** What the model did, read from its steps. */
export function researchBehaviour(steps: readonly ResearchStep[], query: ResearchQuery): ResearchBehaviour {
  const executed = steps.filter((s) => s.outcome === 'executed' && s.action);
  const opened = new Set(executed.flatMap((s) => (s.action!.kind === 'open' ? [s.action!.docid] : [])));
  const seen = new Set(executed.flatMap((s) => s.shown ?? []));
  return {
    searches: executed.filter((s) => s.action!.kind === 'search').length,
    documents_opened: opened.size,
    gold_opened: query.gold_docs.some((d) => opened.has(d)),
    gold_seen: query.gold_docs.some((d) => opened.has(d) || seen.has(d)),
    answered: steps.some((s) => s.outcome === 'answered' || s.outcome === 'answered_unsearched'),
    parsable_turns: steps.length ? steps.filter((s) => s.action !== null).length / steps.length : 0,
  };
}
