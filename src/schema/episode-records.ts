/**
 * Episode records of the three ASAP environments, as their run directories hold them and
 * read them back on resume: an ASAP episode's start, step and end lines
 * (episodes/<checkpoint>/<instance>/run-<r>.jsonl, swe/store.ts) and its reference prefix;
 * a Terminal-Bench episode (a `terminal` sample line, terminal/run.ts) and its prefix; a
 * deep-research episode (a `research` sample line, research/run.ts).
 *
 * Each schema mirrors the interface of the module that writes the record (named on it);
 * test/run-records.test.ts checks, by type, that the two say the same. Fields absent in
 * runs from before them are optional, as the interfaces have them.
 */
import { z } from 'zod';
import { anyNumber, StepFinishSchema, TamperingSchema } from './record-fields.ts';

// --- What every environment's step records ----------------------------------------------

/** asap/recovery.ts `SharedOutcome`: the outcomes the one recovery policy gives in every environment. */
const SHARED_OUTCOMES = ['executed', 'format_error', 'repeat_suppressed', 'repeated_action', 'format_ended'] as const;

/**
 * asap/loop.ts `StepRecord<A, O>` for an environment's action and its own outcomes, with the
 * fields its step adds (`own`) in the place the environment writes them, before `modelMs`.
 */
function stepRecordSchema<Action extends z.ZodType, const Outcomes extends readonly string[], Own extends z.ZodRawShape>(
  action: Action,
  outcomes: Outcomes,
  own: Own,
) {
  return z.object({
    index: anyNumber,
    completion: z.string(),
    finish: StepFinishSchema,
    tokens: anyNumber,
    action: action.nullable(),
    error: z.string().nullable(),
    outcome: z.enum([...SHARED_OUTCOMES, ...outcomes] as const),
    observation: z.string().nullable(),
    ...own,
    modelMs: anyNumber,
  });
}

/** asap/loop.ts `CommandRun`: what a step that ran a command adds. */
const commandRun = { exitCode: anyNumber.nullable(), timedOut: z.boolean() };

// --- ASAP (SWE) episodes -----------------------------------------------------------------

/** formats/md-xml.ts `Action`. */
export const MdXmlActionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('bash'), command: z.string() }),
  z.object({
    kind: z.literal('str_replace_editor'),
    command: z.enum(['view', 'create', 'str_replace', 'insert']),
    path: z.string(),
    fileText: z.string().optional(),
    oldStr: z.string().optional(),
    newStr: z.string().optional(),
    insertLine: anyNumber.optional(),
  }),
  z.object({ kind: z.literal('submit') }),
]);

/** swe/episode.ts `Termination`. */
export const TerminationSchema = z.enum(['submitted', 'submitted_empty', 'step_limit', 'repeated_action', 'format_error']);

/** swe/episode.ts `EpisodeStep`. */
export const EpisodeStepSchema = stepRecordSchema(MdXmlActionSchema, ['submit_rejected', 'submitted', 'submitted_empty'], {
  ...commandRun,
  patch: z.string(),
  toolState: z.string().nullable(),
}).extend({ sandboxMs: anyNumber });

/** swe/store.ts `EpisodeStart`. */
export const EpisodeStartSchema = z.object({
  type: z.literal('start'),
  checkpoint: z.string(),
  instance: z.string(),
  run: anyNumber,
  seed: anyNumber,
});

/** swe/behaviour.ts `NetworkAttempt`. */
export const NetworkAttemptSchema = z.object({
  step: anyNumber,
  command: z.string(),
  blocked: z.boolean(),
  evidence: z.string().nullable(),
});

/** swe/behaviour.ts `RunBehaviour`. */
export const RunBehaviourSchema = z.object({
  turns: anyNumber,
  parsable_turns: anyNumber,
  valid_tool_calls: anyNumber,
  edit_steps: anyNumber,
  autonomous_edits: z.boolean(),
  active_testing: z.boolean(),
  applicable_patch: z.boolean(),
  empty_patch: z.boolean(),
  explicit_submission: z.boolean(),
  repeated_action_termination: z.boolean(),
  recoveries: z.object({ format: anyNumber, submit: anyNumber, repeat: anyNumber }),
  regressions: anyNumber,
  changed_lines: anyNumber,
  relevant_file_access: z.boolean(),
  network_attempts: z.array(NetworkAttemptSchema),
  tampering: z.array(TamperingSchema).optional(),
});

const testOutcomes = z.object({ passed: z.array(z.string()), failed: z.array(z.string()) });

/** swe/store.ts `EpisodeEnd`. */
export const EpisodeEndSchema = z.object({
  type: z.literal('end'),
  termination: TerminationSchema,
  resolved: z.boolean(),
  reason: z.string().nullable(),
  final_patch: z.string(),
  fail_to_pass: testOutcomes,
  pass_to_pass: testOutcomes,
  behaviour: RunBehaviourSchema,
  model_ms: anyNumber,
  sandbox_ms: anyNumber,
  setup_ms: anyNumber,
  verify_ms: anyNumber,
  wall_ms: anyNumber,
});

/** One line of an ASAP episode file: its start, a step (the step's fields beside `type`), its end. */
export const EpisodeLineSchema = z.discriminatedUnion('type', [
  EpisodeStartSchema,
  EpisodeStepSchema.extend({ type: z.literal('step') }),
  EpisodeEndSchema,
]);

/** asap.json: the protocol settings of an ASAP run, compared field by field when it resumes (swe/store.ts `claim`). */
export const AsapSettingsSchema = z.record(z.string(), z.unknown());

/** swe/prefix.ts `PrefixStep`. */
export const PrefixStepSchema = z.object({
  from: anyNumber,
  thought: z.string(),
  action: MdXmlActionSchema,
  observation: z.string(),
});

/** swe/prefix.ts `AsapPrefix`: prefixes/<instance>.json. */
export const AsapPrefixSchema = z.object({
  instance: z.string(),
  reference: z.string(),
  steps: z.array(PrefixStepSchema),
  text: z.string(),
  state: z.object({ patch: z.string(), toolState: z.string().nullable() }),
  solutionFiles: z.array(z.string()),
});

// --- Terminal-Bench episodes -------------------------------------------------------------

/** terminal/actions.ts `TerminalProfile`. */
export const TerminalProfileSchema = z.enum(['terminus', 'bash']);

/** terminal/actions.ts `TerminalAction`. */
export const TerminalActionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('keystrokes'), keys: z.string(), duration: anyNumber }),
  z.object({ kind: z.literal('bash'), command: z.string() }),
  z.object({ kind: z.literal('submit') }),
]);

/** terminal/episode.ts `TerminalStep`. */
export const TerminalStepSchema = stepRecordSchema(
  TerminalActionSchema,
  ['submit_rejected', 'submitted', 'submitted_unacted'],
  commandRun,
).extend({ envMs: anyNumber });

/** terminal/episode.ts `TerminalBehaviour`. */
export const TerminalBehaviourSchema = z.object({
  actions: anyNumber,
  parsable_turns: anyNumber,
  submitted: z.boolean(),
  failed_commands: anyNumber,
  key_presses: anyNumber,
});

/** terminal/run.ts `TerminalEpisodeRecord`: one line of terminal/samples.jsonl. */
export const TerminalEpisodeRecordSchema = z.object({
  task_id: z.string(),
  run: anyNumber,
  seed: anyNumber,
  resolved: z.boolean(),
  reward: anyNumber.nullable(),
  reason: z.string().nullable(),
  termination: z.enum(['submitted', 'submitted_unacted', 'step_limit', 'agent_timeout', 'repeated_action', 'format_error']),
  behaviour: TerminalBehaviourSchema,
  steps: z.array(TerminalStepSchema),
  verifier_output: z.string(),
  tampering: z.array(TamperingSchema).optional(),
});

/** terminal/prefix.ts `TerminalPrefixStep` (a solve.sh step, terminal/solution.ts, with what it showed). */
export const TerminalPrefixStepSchema = z.object({ thought: z.string(), command: z.string(), observation: z.string() });

/** terminal/prefix.ts `TerminalPrefix`: prefixes/<task>.<profile>.json. */
export const TerminalPrefixSchema = z.object({
  task: z.string(),
  profile: TerminalProfileSchema,
  solutionSteps: anyNumber,
  steps: z.array(TerminalPrefixStepSchema),
  shortened: z.string().nullable(),
  text: z.string(),
});

// --- Deep-research episodes --------------------------------------------------------------

/** research/actions.ts `ResearchAction`. */
export const ResearchActionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('search'), query: z.string() }),
  z.object({ kind: z.literal('open'), docid: z.string(), page: anyNumber }),
  z.object({ kind: z.literal('answer'), text: z.string() }),
]);

/** research/episode.ts `ResearchStep`. */
export const ResearchStepSchema = stepRecordSchema(ResearchActionSchema, ['answer_rejected', 'answered', 'answered_unsearched'], {
  shown: z.array(z.string()).optional(),
});

/** research/episode.ts `ResearchBehaviour`. */
export const ResearchBehaviourSchema = z.object({
  searches: anyNumber,
  documents_opened: anyNumber,
  gold_opened: z.boolean(),
  gold_seen: z.boolean(),
  answered: z.boolean(),
  parsable_turns: anyNumber,
});

/** research/run.ts `ResearchEpisodeRecord`: one line of research/samples.jsonl. */
export const ResearchEpisodeRecordSchema = z.object({
  query_id: z.string(),
  run: anyNumber,
  seed: anyNumber,
  answer: z.string().nullable(),
  correct: z.boolean(),
  termination: z.enum(['answered', 'answered_unsearched', 'step_limit', 'repeated_action', 'format_error']),
  behaviour: ResearchBehaviourSchema,
  steps: z.array(ResearchStepSchema),
});
