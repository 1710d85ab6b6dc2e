/** The normalized trajectory every importer produces (zod). */
import { z } from 'zod';

/**
 * What an action does, for reports and diagnostics. Whether a step changed the working
 * tree is decided by diffing during replay, never from this kind.
 */
export const ActionKind = z.enum(['bash', 'edit', 'create', 'view', 'search', 'navigate', 'submit', 'other']);
export type ActionKind = z.infer<typeof ActionKind>;

export const TrajectoryAction = z.object({
  /** The action exactly as the agent wrote it: the text the probes score in the native format. */
  text: z.string(),
  kind: ActionKind,
  /** The tool that executes it: `bash`, `str_replace_editor`, `swe-agent` (windowed editor), `submit`. */
  tool: z.string(),
  /** Parsed arguments: `command` for bash; `command`, `path`, `old_str`, … for editors. */
  args: z.record(z.string(), z.unknown()),
});
export type TrajectoryAction = z.infer<typeof TrajectoryAction>;

export const TrajectoryStep = z.object({
  index: z.number().int().nonnegative(),
  thought: z.string(),
  /** The model's whole turn in the scaffold's own text (thought and action). */
  response: z.string(),
  action: TrajectoryAction,
  /** What the environment answered, as recorded; null when nothing was recorded. */
  observation: z.string().nullable(),
});
export type TrajectoryStep = z.infer<typeof TrajectoryStep>;

export const Trajectory = z.object({
  /** The scaffold that wrote it, as its importer names it (`SCAFFOLDS` in formats/registry.ts, which sits above this schema). */
  format: z.string().min(1),
  /** File the trajectory was read from; `FILE#INDEX` for a row of a trajectory dataset. */
  source: z.string(),
  /**
   * What tells this trajectory apart from its task's others, where its file name cannot
   * (a dataset row: its `traj_id`, else `<file name>#<index>`).
   */
  label: z.string().optional(),
  /** The task text the agent was given, where the file records it. */
  problemStatement: z.string().nullable(),
  /** Scaffold messages before the first action (system prompt, task message), verbatim. */
  preamble: z.array(z.object({ role: z.string(), content: z.string() })),
  steps: z.array(TrajectoryStep),
  /** The patch or final output the run submitted, where recorded. */
  submission: z.string().nullable(),
  /** The working directory the scaffold itself recorded (SWE-agent's per-step `state`), where it did. */
  recordedWorkdir: z.string().optional(),
});
export type Trajectory = z.infer<typeof Trajectory>;
