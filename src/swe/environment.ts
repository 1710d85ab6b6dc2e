/** The SWE environment's declaration: how its results are shown (asap/environment.ts). */
import type { EnvironmentDeclaration } from '../asap/environment.ts';
import { TERMINATIONS } from './episode.ts';
import type { AsapResult } from './run.ts';

export const SWE_ENVIRONMENT: EnvironmentDeclaration<AsapResult> = {
  name: 'swe',
  reportKey: 'asap',
  section: { id: 'asap', title: 'ASAP episodes', ranking: 'ASAP', whenEmpty: 'No ASAP results in these runs.' },
  terminations: TERMINATIONS,
  size: (r) => `${r.instances} × ${r.runs}`,
  columns: {
    leading: [],
    table: [
      { header: 'parsable', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'valid calls', value: (r) => r.behaviour.valid_tool_calls, as: 'percent' },
      { header: 'edits', value: (r) => r.behaviour.autonomous_edits, as: 'percent' },
      { header: 'testing', value: (r) => r.behaviour.active_testing, as: 'percent' },
      { header: 'submitted', value: (r) => r.behaviour.explicit_submission, as: 'percent' },
      { header: 'empty patch', value: (r) => r.behaviour.empty_patch, as: 'percent' },
      { header: 'turns', value: (r) => r.behaviour.mean_turns, as: 'mean' },
    ],
    ranking: [
      { header: 'parsable', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'edits', value: (r) => r.behaviour.autonomous_edits, as: 'percent' },
    ],
    report: [
      { header: 'parsable turns', value: (r) => r.behaviour.parsable_turns, as: 'percent' },
      { header: 'valid calls', value: (r) => r.behaviour.valid_tool_calls, as: 'percent' },
      { header: 'edits', value: (r) => r.behaviour.autonomous_edits, as: 'percent' },
      { header: 'testing', value: (r) => r.behaviour.active_testing, as: 'percent' },
      { header: 'applicable patch', value: (r) => r.behaviour.applicable_patch, as: 'percent' },
      { header: 'empty patch', value: (r) => r.behaviour.empty_patch, as: 'percent' },
      { header: 'submitted', value: (r) => r.behaviour.explicit_submission, as: 'percent' },
      { header: 'regressions', value: (r) => r.behaviour.regressions, as: 'percent' },
      { header: 'turns', value: (r) => r.behaviour.mean_turns, as: 'mean' },
    ],
  },
};
