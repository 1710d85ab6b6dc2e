/** What ships inside the repository: the checkpoint ladder and the demo probe set. */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const EMBEDDED_CHECKPOINTS = join(REPO_ROOT, 'checkpoints');
export const EMBEDDED_PROBES = join(REPO_ROOT, 'probes');
/**
 * The shipped set the sampling verbs default to (pass@K, screen, watch): built from the demo
 * trajectories, so every item's state restores in its task. The scoring fixtures beside it
 * (demo-fixtures.jsonl) name those tasks but no state of theirs: they score, never sample.
 */
export const EMBEDDED_SAMPLING_PROBES = join(EMBEDDED_PROBES, 'demo.jsonl');
/** The shipped Terminal-Bench task directories (`probe asap --env terminal`). */
export const EMBEDDED_TERMINAL_TASKS = join(REPO_ROOT, 'task-sets', 'terminal-bench');
/** The shipped deep-research set (`probe asap --env research`). */
export const EMBEDDED_RESEARCH_SET = join(REPO_ROOT, 'task-sets', 'research-licenses');

export interface LadderManifest {
  rungs: Array<{ name: string; family: string; corpora: string[]; description: string; control?: boolean; heldout_code_bpb?: number }>;
  /** The hand-built rungs, by construction: groups, best (lowest BPB) first; rungs in one group are not ordered against each other. */
  expected_order: string[][];
  /** The real rungs, best first, by the held-out code BPB measured when they were trained. */
  known_order: string[];
}

export function readLadder(): LadderManifest {
  return JSON.parse(readFileSync(join(EMBEDDED_CHECKPOINTS, 'ladder.json'), 'utf8')) as LadderManifest;
}

/** Directories of the embedded checkpoints, in ladder order. */
export function embeddedCheckpointDirs(): string[] {
  return readLadder().rungs.map((r) => join(EMBEDDED_CHECKPOINTS, r.name));
}
