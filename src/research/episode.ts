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
import type { CompletionBackend } from '../backends/types.ts';
import { type EpisodeEnvironment, type LoopSettings, runEpisodeLoop, type StepRecord } from '../asap/loop.ts';
import { decide, type Decision, type RecoveryRules, type SharedOutcome } from '../asap/recovery.ts';
import { asapFormat, transcriptText } from '../formats/asap-transcripts.ts';
import { renderTask } from '../formats/md-xml.ts';
import { type FoundResearchAction, findResearchAction, RESEARCH_STOPS, type ResearchAction, runResearchTool } from './actions.ts';
import type { ResearchQuery } from './corpus.ts';
import { gradeAnswer } from './grade.ts';
import type { ResearchIndex } from './search-index.ts';

export const RESEARCH_TERMINATIONS = ['answered', 'answered_unsearched', 'step_limit', 'repeated_action', 'format_error'] as const;
export type ResearchTermination = (typeof RESEARCH_TERMINATIONS)[number];

/** The final action's outcomes: accepted, rejected (nothing searched or opened yet), accepted anyway. */
type FinalOutcome = 'answered' | 'answer_rejected' | 'answered_unsearched';
export type ResearchOutcome = FinalOutcome | SharedOutcome;

export interface ResearchStep extends StepRecord<ResearchAction, FinalOutcome> {
  /** Documents the observation showed: a search's hits, the page opened (absent where nothing ran). */
  shown?: string[];
}

export interface ResearchEpisodeSettings extends LoopSettings {
  /** Hits a search shows. */
  searchK: number;
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

export type ResearchDecision = Decision<ResearchAction, FinalOutcome>;

/** Recovery's rules here: every tool is offered, and having acted is having searched or opened something. */
const RESEARCH_RULES: RecoveryRules<ResearchAction, FinalOutcome> = {
  isFinal: (action) => action.kind === 'answer',
  offers: () => true,
  profile: 'research',
  repeatable: () => true,
  hasActed: (history) => history.some((s) => s.outcome === 'executed'),
  names: { accepted: 'answered', rejected: 'answer_rejected', unacted: 'answered_unsearched' },
  hints: { format: RESEARCH_HINTS.format, tool: () => '', final: RESEARCH_HINTS.answer, repeat: RESEARCH_HINTS.repeat },
};

/** What the harness does with a completion, given the steps before it (pure). */
export function decideResearch(history: readonly ResearchStep[], found: FoundResearchAction): ResearchDecision {
  return decide(RESEARCH_RULES, history, found);
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

/** The deep-research environment of one episode: the index, and the question as its task. */
export function researchEpisode(
  index: ResearchIndex,
  query: ResearchQuery,
  searchK: number,
): EpisodeEnvironment<ResearchAction, FinalOutcome, ResearchStep> {
  const task = researchTask(query.query, searchK);
  return {
    rules: RESEARCH_RULES,
    prompt: (steps) => researchTranscript(task, steps),
    completion: { stops: RESEARCH_STOPS, find: findResearchAction, continueAfterStop: true },
    idle: () => ({}),
    execute: async (action) => runResearchTool(index, action as Exclude<ResearchAction, { kind: 'answer' }>, searchK),
  };
}

export async function runResearchEpisode(
  backend: CompletionBackend,
  index: ResearchIndex,
  query: ResearchQuery,
  settings: ResearchEpisodeSettings,
  onStep: (step: ResearchStep) => Promise<void> = async () => {},
): Promise<ResearchEpisodeResult> {
  const { steps, termination } = await runEpisodeLoop(researchEpisode(index, query, settings.searchK), backend, settings, onStep);
  const last = steps.at(-1);
  const answer = termination !== 'step_limit' && last?.action?.kind === 'answer' ? last.action.text : null;
  return { steps, termination: termination as ResearchTermination, answer, correct: answer !== null && gradeAnswer(answer, query).correct };
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
