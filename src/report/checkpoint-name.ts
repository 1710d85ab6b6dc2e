/**
 * A checkpoint as tables name it: a control (a model that has seen the probes, what its
 * config.json's `probe_ladder` block says: backends/checkpoint.ts) is marked everywhere
 * it is listed, also where its name is read back from results.
 */
import { checkpointFacts } from '../backends/checkpoint.ts';

/** The label a table puts after a control's name. */
export const CONTROL_LABEL = '(control)';

/** A checkpoint as a table names it: a control is marked, everywhere it is listed. */
export function tableName(checkpoint: string): string {
  return checkpointFacts(checkpoint).control ? `${checkpoint} ${CONTROL_LABEL}` : checkpoint;
}
