/** The probe item contract (design.md): one JSON object per line in `probes/*.jsonl`. */
import { z } from 'zod';

/** How to bring the environment to the state just before the decisive step. */
export const EnvState = z.discriminatedUnion('kind', [
  z.looseObject({
    kind: z.literal('patch'),
    base_commit: z.string().min(1),
    /** Cumulative patch of the steps before T*, applied to base_commit. */
    patch: z.string(),
    /** State of the in-sandbox editors before T* (SWE-agent's open file and window), when it matters. */
    tool_state: z.string().optional(),
  }),
  z.looseObject({
    kind: z.literal('replay'),
    base_commit: z.string().min(1),
    /** Replay this many of the trajectory's actions (those before T*). */
    actions: z.number().int().nonnegative(),
  }),
]);
export type EnvState = z.infer<typeof EnvState>;

/** Patch MCQ asks only items with this many distractors (options = 1 + this, at least); the builder flags items with fewer. */
export const MCQ_MIN_DISTRACTORS = 3;

export const ProbeItem = z.looseObject({
  id: z.string().min(1),
  /** Instance id of the task (`verifiers/<id>/task.json`). */
  task: z.string().min(1),
  /** How the context is rendered, e.g. `md+xml`, `mini-swe-agent`. */
  format: z.string().min(1),
  /** The exact prefix scored. */
  context: z.string(),
  /** The decisive action exactly as the model would write it. */
  gold: z.string().min(1),
  /** Actions the verifier rejects at the same state. */
  distractors: z.array(z.string()),
  /** Index of the decisive action among the trajectory's actions, 0-based. */
  decisive_step: z.number().int().nonnegative(),
  state: EnvState,
  /** Where the repository sat in the sandbox when the item was built (the directory the trajectory ran in); absent: the task's own `workdir`. */
  workdir: z.string().optional(),
  source: z.looseObject({ file: z.string().min(1), format: z.string().min(1) }),
});
export type ProbeItem = z.infer<typeof ProbeItem>;
