/** The deep-research environment's declaration (asap/environment.ts): how its episodes run and its results are shown and read back. */
import { z } from 'zod';
import type { EnvironmentDeclaration } from '../asap/environment.ts';
import { finite, maybeRate, rates } from '../schema/record-fields.ts';
import { RESEARCH_EPISODES } from './episodes.ts';
import { RESEARCH_TERMINATIONS } from './episode.ts';
import type { ResearchResult } from './run.ts';

export const RESEARCH_ENVIRONMENT: EnvironmentDeclaration<ResearchResult> = {
  name: 'research',
  summary: 'a document corpus, the answer decides',
  episodes: RESEARCH_EPISODES,
  resultSchema: z.looseObject({
    checkpoint: z.string(),
    env: z.literal('research'),
    pass_at: rates,
    intersection: maybeRate,
    behaviour: z.looseObject({
      searches: finite,
      documents_opened: finite,
      gold_opened: maybeRate,
      answered: maybeRate,
      parsable_turns: maybeRate,
      mean_turns: finite,
    }),
    items: z.array(z.looseObject({ query_id: z.string(), n: z.number(), c: z.number() })),
  }),
  section: { id: 'research', title: 'Deep-research episodes', ranking: 'Deep research' },
  terminations: RESEARCH_TERMINATIONS,
  size: (r) => `${r.queries} × ${r.runs}`,
  columns: {
    leading: [],
    table: [
      { header: 'parsable', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'searches', value: (r) => r.behaviour.searches, as: 'mean' },
      { header: 'opened', value: (r) => r.behaviour.documents_opened, as: 'mean' },
      { header: 'gold opened', value: (r) => r.behaviour.gold_opened, as: 'percent' },
      { header: 'answered', value: (r) => r.behaviour.answered, as: 'percent' },
      { header: 'turns', value: (r) => r.behaviour.mean_turns, as: 'mean' },
    ],
    ranking: [
      { header: 'parsable', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'searches', value: (r) => r.behaviour.searches, as: 'mean' },
      { header: 'gold opened', value: (r) => r.behaviour.gold_opened, as: 'percent' },
      { header: 'answered', value: (r) => r.behaviour.answered, as: 'percent' },
    ],
    report: [
      { header: 'parsable turns', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'searches', value: (r) => r.behaviour.searches, as: 'mean' },
      { header: 'documents opened', value: (r) => r.behaviour.documents_opened, as: 'mean' },
      { header: 'gold opened', value: (r) => r.behaviour.gold_opened, as: 'percent' },
      { header: 'gold seen', value: (r) => r.behaviour.gold_seen, as: 'percent' },
      { header: 'answered', value: (r) => r.behaviour.answered, as: 'percent' },
      { header: 'turns', value: (r) => r.behaviour.mean_turns, as: 'mean' },
    ],
  },
};
