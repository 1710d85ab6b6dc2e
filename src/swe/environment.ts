/** The SWE environment's declaration (asap/environment.ts): how its results are shown and read back (its episodes are the protocol's own rung: pipeline/asap.ts). */
import { z } from 'zod';
import type { EnvironmentDeclaration } from '../asap/environment.ts';
import { maybeRate, rates } from '../schema/record-fields.ts';
import { TERMINATIONS } from './episode.ts';
import type { AsapResult } from './run.ts';

export const SWE_ENVIRONMENT: EnvironmentDeclaration<AsapResult> = {
  name: 'swe',
  summary: 'repository tasks, tests decide',
  resultSchema: z.looseObject({
    checkpoint: z.string(),
    pass_at: rates,
    intersection: maybeRate,
    behaviour: z.looseObject({ parsable_turns: z.number().nullable(), autonomous_edits: z.number().nullable() }),
    items: z.array(z.looseObject({ instance: z.string(), runs: z.array(z.looseObject({ run: z.number() })) })),
  }),
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
