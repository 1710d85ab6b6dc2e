/** The deep-research environment's declaration: how its results are shown (asap/environment.ts). */
import type { EnvironmentDeclaration } from '../asap/environment.ts';
import { RESEARCH_TERMINATIONS } from './episode.ts';
import type { ResearchResult } from './run.ts';

export const RESEARCH_ENVIRONMENT: EnvironmentDeclaration<ResearchResult> = {
  name: 'research',
  reportKey: 'research',
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
