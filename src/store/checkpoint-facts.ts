/**
 * What a checkpoint directory says about itself, beyond its weights, in the
 * `probe_ladder` block of its config.json: whether it is a control (a model that has
 * seen the probes, the ceiling the probes must detect — never a candidate for
 * post-training), and its known quality where the run that made it measured one
 * (held-out code BPB), which is the order the probes are checked against.
 *
 * A checkpoint behind a server, or a directory without the block, is a candidate with no
 * known quality.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isServerAddress } from '../backends/open.ts';

export interface CheckpointFacts {
  /** Has seen the probes: shown as a ceiling, never shortlisted, recommended or correlated (unless asked for). */
  control: boolean;
  /** Held-out code BPB measured when it was made (lower is better), where known. */
  heldout_code_bpb: number | null;
}

export const NO_FACTS: CheckpointFacts = { control: false, heldout_code_bpb: null };

export function checkpointFacts(checkpoint: string): CheckpointFacts {
  if (isServerAddress(checkpoint)) return NO_FACTS;
  const file = join(checkpoint, 'config.json');
  if (!existsSync(file)) return NO_FACTS;
  let ladder: unknown;
  try {
    ladder = (JSON.parse(readFileSync(file, 'utf8')) as { probe_ladder?: unknown }).probe_ladder;
  } catch {
    return NO_FACTS; // reading the checkpoint itself reports a malformed config.json
  }
  if (!ladder || typeof ladder !== 'object') return NO_FACTS;
  const { control, contaminated, heldout_code_bpb: bpb } = ladder as Record<string, unknown>;
  return {
    control: control === true || contaminated === true,
    heldout_code_bpb: typeof bpb === 'number' && Number.isFinite(bpb) ? bpb : null,
  };
}

/** The label a table puts after a control's name. */
export const CONTROL_LABEL = '(control)';

/** A checkpoint as a table names it: a control is marked, everywhere it is listed. */
export function tableName(checkpoint: string): string {
  return checkpointFacts(checkpoint).control ? `${checkpoint} ${CONTROL_LABEL}` : checkpoint;
}
