/** The ladder's results contract: what `probe screen` and `probe demo` write in results.json and `probe report` reads back. */

/** A row of the ladder, as `probe screen` and `probe demo` write it in results.json. */
export interface LadderRow {
  checkpoint: string;
  bpb: number;
  mcq_acc: number;
  mcq_acc_norm: number | null;
  /** Mean of the BPB rank and the MCQ rank (1 = best). */
  cheap_rank: number;
  pass_at: Record<string, number> | null;
  shortlisted: boolean;
  /** ASAP on the shortlist: Pass@1, Intersection@n and the headline behaviour rates. */
  asap: { pass_at_1: number; intersection: number; parsable_turns: number; valid_tool_calls: number; autonomous_edits: number } | null;
  /**
   * ASAP on the shortlist in the other environment kinds, where the ladder ran them
   * (`--asap-env terminal research`), by name: Pass@1, Intersection@n, parsable turns. Absent otherwise.
   */
  asap_envs?: Record<string, EnvironmentSummary>;
  /** Has seen the probes: a ceiling shown beside the ladder, never shortlisted (checkpointFacts, backends/checkpoint.ts). Absent in runs from before. */
  control?: boolean;
  /** Held-out code BPB measured when the checkpoint was trained, where known: the order the probes are checked against. */
  heldout_code_bpb?: number | null;
}

/** One environment kind's ASAP headline for a checkpoint. */
export interface EnvironmentSummary {
  pass_at_1: number;
  intersection: number;
  parsable_turns: number;
}
