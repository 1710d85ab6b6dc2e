/** The Terminal-Bench environment's declaration: how its results are shown (asap/environment.ts). */
import type { EnvironmentDeclaration } from '../asap/environment.ts';
import { TERMINAL_TERMINATIONS } from './episode.ts';
import type { TerminalResult } from './run.ts';

export const TERMINAL_ENVIRONMENT: EnvironmentDeclaration<TerminalResult> = {
  name: 'terminal',
  reportKey: 'terminal',
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
