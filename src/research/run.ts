/**
 * Deep-research episodes of one checkpoint over a set: `runs` episodes per query (seeds
 * derived from the run's seed, the query and the run index, the same for every checkpoint),
 * graded by the answer; pass@k and Intersection@n over queries, as for SWE episodes, and
 * the behaviour of this kind of environment. Finished episodes are read back from the memo.
 */
import type { CompletionBackend } from '../backends/types.ts';
import type { ItemHooks } from '../probes/memo.ts';
import {
  countTerminations,
  type EpisodeRunOptions,
  type EpisodesResult,
  meanOver,
  passSummary,
  runCheckpointEpisodes,
} from '../asap/episodes.ts';
import type { ResearchQuery } from './corpus.ts';
import {
  RESEARCH_TERMINATIONS,
  type ResearchBehaviour,
  type ResearchEpisodeSettings,
  type ResearchStep,
  type ResearchTermination,
  researchBehaviour,
  runResearchEpisode,
} from './episode.ts';
import type { ResearchIndex } from './search-index.ts';

export interface ResearchEpisodeRecord {
  query_id: string;
  run: number;
  seed: number;
  answer: string | null;
  correct: boolean;
  termination: ResearchTermination;
  behaviour: ResearchBehaviour;
  steps: ResearchStep[];
}

export interface ResearchResult extends EpisodesResult<ResearchTermination> {
  env: 'research';
  queries: number;
  behaviour: {
    searches: number;
    documents_opened: number;
    gold_opened: number;
    gold_seen: number;
    answered: number;
    parsable_turns: number;
    mean_turns: number;
  };
  items: Array<{ query_id: string; n: number; c: number; answers: Array<string | null> }>;
}

export interface ResearchRunOptions extends Omit<ResearchEpisodeSettings, 'seed'>, EpisodeRunOptions {}

export function runResearch(
  checkpoint: string,
  backend: CompletionBackend,
  index: ResearchIndex,
  queries: readonly ResearchQuery[],
  options: ResearchRunOptions,
  hooks: ItemHooks<ResearchEpisodeRecord> = {},
): Promise<ResearchResult> {
  return runCheckpointEpisodes(
    backend,
    queries,
    options,
    {
      idOf: (query) => query.query_id,
      runOne: async ({ instance: query, id, run, seed }) => {
        const episode = await runResearchEpisode(backend, index, query, { ...options, seed, label: `the episode of query ${id}#${run}` });
        return {
          query_id: query.query_id,
          run,
          seed,
          answer: episode.answer,
          correct: episode.correct,
          termination: episode.termination,
          behaviour: researchBehaviour(episode.steps, query),
          steps: episode.steps,
        };
      },
      summarize: (records) => summarize(checkpoint, backend.id, queries, records, options.runs),
    },
    hooks,
  );
}

function summarize(
  checkpoint: string,
  backendId: string,
  queries: readonly ResearchQuery[],
  records: readonly ResearchEpisodeRecord[],
  runs: number,
): ResearchResult {
  const items = queries.map((q) => {
    const mine = records.filter((r) => r.query_id === q.query_id).sort((a, b) => a.run - b.run);
    return { query_id: q.query_id, n: mine.length, c: mine.filter((r) => r.correct).length, answers: mine.map((r) => r.answer) };
  });
  const { pass_at, solvedAlways } = passSummary(items, runs);
  const mean = (f: (r: ResearchEpisodeRecord) => number) => meanOver(records, f);
  return {
    checkpoint,
    backend: backendId,
    env: 'research',
    runs,
    queries: queries.length,
    pass_at,
    intersection: items.length ? solvedAlways / items.length : 0,
    behaviour: {
      searches: mean((r) => r.behaviour.searches),
      documents_opened: mean((r) => r.behaviour.documents_opened),
      gold_opened: mean((r) => Number(r.behaviour.gold_opened)),
      gold_seen: mean((r) => Number(r.behaviour.gold_seen)),
      answered: mean((r) => Number(r.behaviour.answered)),
      parsable_turns: mean((r) => r.behaviour.parsable_turns),
      mean_turns: mean((r) => r.steps.length),
    },
    terminations: countTerminations(RESEARCH_TERMINATIONS, records),
    items,
  };
}
