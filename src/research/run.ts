/**
 * Deep-research episodes of one checkpoint over a set: `runs` episodes per query (seeds
 * derived from the run's seed, the query and the run index, the same for every checkpoint),
 * graded by the answer; pass@k and Intersection@n over queries, as for SWE episodes, and
 * the behaviour of this kind of environment. Finished episodes are read back from the memo.
 */
import { samplerRecord } from '../backends/sampler-record.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { type ItemHooks, memoized } from '../probes/memo.ts';
import { passAtKs } from '../protocol.ts';
import { meanPassAtK } from '../stats/pass-at-k.ts';
import { mapLimit } from '../util/pool.ts';
import { deriveSeed } from '../util/rng.ts';
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

export interface ResearchResult {
  checkpoint: string;
  backend: string;
  /** The distribution the episodes' steps were drawn from, as the backend ran it (absent in older runs). */
  sampler?: Record<string, unknown>;
  env: 'research';
  runs: number;
  queries: number;
  pass_at: Record<string, number>;
  /** Queries answered correctly in every run. */
  intersection: number;
  behaviour: {
    searches: number;
    documents_opened: number;
    gold_opened: number;
    gold_seen: number;
    answered: number;
    parsable_turns: number;
    mean_turns: number;
  };
  terminations: Record<ResearchTermination, number>;
  items: Array<{ query_id: string; n: number; c: number; answers: Array<string | null> }>;
}

export interface ResearchRunOptions extends Omit<ResearchEpisodeSettings, 'seed'> {
  runs: number;
  seed: number;
  /** Episodes at once (the backend's concurrency is the useful bound). */
  concurrency: number;
}

export async function runResearch(
  checkpoint: string,
  backend: CompletionBackend,
  index: ResearchIndex,
  queries: readonly ResearchQuery[],
  options: ResearchRunOptions,
  hooks: ItemHooks<ResearchEpisodeRecord> = {},
): Promise<ResearchResult> {
  const jobs = queries.flatMap((query) => Array.from({ length: options.runs }, (_, run) => ({ query, run })));
  const records = await mapLimit(jobs, options.concurrency, async ({ query, run }) => {
    const id = `${query.query_id}#${run}`;
    const record = await memoized(hooks.memo, id, async (): Promise<ResearchEpisodeRecord> => {
      const seed = deriveSeed(options.seed, query.query_id, run);
      const episode = await runResearchEpisode(backend, index, query, { ...options, seed, label: `the episode of query ${id}` });
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
    });
    hooks.onItem?.(id);
    return record;
  });
  return { ...summarize(checkpoint, backend.id, queries, records, options.runs), ...(await samplerRecord(backend, options)) };
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
  const pass_at = Object.fromEntries(passAtKs(runs).map((k) => [String(k), meanPassAtK(items, k)]));
  const mean = (f: (r: ResearchEpisodeRecord) => number) => (records.length ? records.reduce((a, r) => a + f(r), 0) / records.length : 0);
  const terminations = Object.fromEntries(
    RESEARCH_TERMINATIONS.map((t) => [t, records.filter((r) => r.termination === t).length]),
  ) as Record<ResearchTermination, number>;
  return {
    checkpoint,
    backend: backendId,
    env: 'research',
    runs,
    queries: queries.length,
    pass_at,
    intersection: items.length ? items.filter((i) => i.n > 0 && i.c === i.n).length / items.length : 0,
    behaviour: {
      searches: mean((r) => r.behaviour.searches),
      documents_opened: mean((r) => r.behaviour.documents_opened),
      gold_opened: mean((r) => Number(r.behaviour.gold_opened)),
      gold_seen: mean((r) => Number(r.behaviour.gold_seen)),
      answered: mean((r) => Number(r.behaviour.answered)),
      parsable_turns: mean((r) => r.behaviour.parsable_turns),
      mean_turns: mean((r) => r.steps.length),
    },
    terminations,
    items,
  };
}
