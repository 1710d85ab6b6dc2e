/** The Terminal-Bench environment's declaration (asap/environment.ts): how its episodes run and its results are shown and read back. */
import { z } from 'zod';
import type { EnvironmentDeclaration } from '../asap/environment.ts';
import { finite, maybeRate, rates } from '../schema/record-fields.ts';
import { TERMINAL_EPISODES } from './episodes.ts';
import { TERMINAL_TERMINATIONS } from './episode.ts';
import type { TerminalResult } from './run.ts';

export const TERMINAL_ENVIRONMENT: EnvironmentDeclaration<TerminalResult> = {
  name: 'terminal',
  summary: 'Terminal-Bench tasks in a container, their tests decide',
  episodes: TERMINAL_EPISODES,
  resultSchema: z.looseObject({
    checkpoint: z.string(),
    env: z.literal('terminal'),
    profile: z.string(),
    runs: z.number().int().positive(),
    pass_at: rates,
    intersection: maybeRate,
    behaviour: z.looseObject({ actions: finite, parsable_turns: maybeRate, submitted: maybeRate, mean_turns: finite }),
    terminations: z.record(z.string(), z.number()),
    items: z.array(z.looseObject({ task_id: z.string(), n: z.number(), c: z.number() })),
  }),
  section: { id: 'terminal', title: 'Terminal-Bench episodes', ranking: 'Terminal tasks' },
  terminations: TERMINAL_TERMINATIONS,
  size: (r) => `${r.tasks} × ${r.runs}`,
  columns: {
    leading: [{ header: 'profile', value: (r) => r.profile, as: 'text' }],
    table: [
      { header: 'parsable', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'actions', value: (r) => r.behaviour.actions, as: 'mean' },
      { header: 'submitted', value: (r) => r.behaviour.submitted, as: 'percent' },
      { header: 'agent timeout', value: (r) => r.terminations.agent_timeout, as: 'count' },
      { header: 'turns', value: (r) => r.behaviour.mean_turns, as: 'mean' },
    ],
    ranking: [
      { header: 'parsable', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'actions', value: (r) => r.behaviour.actions, as: 'mean' },
      { header: 'submitted', value: (r) => r.behaviour.submitted, as: 'percent' },
    ],
    report: [
      { header: 'parsable turns', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'actions', value: (r) => r.behaviour.actions, as: 'mean' },
      { header: 'submitted', value: (r) => r.behaviour.submitted, as: 'percent' },
      { header: 'turns', value: (r) => r.behaviour.mean_turns, as: 'mean' },
    ],
  },
};
