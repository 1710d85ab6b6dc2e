/**
 * ASAP's minimal recovery (mission.md), one policy for every environment: at most once per
 * failure type,
 * - no parsable action, or a tool the episode does not offer: a format hint, then the episode ends;
 * - the final action (submit, answer) before the model has done anything that counts: rejected
 *   with a hint, then accepted (the environment names the accepted-anyway ending);
 * - the previous step's action again: suppressed with a hint, then the episode ends.
 * The harness never inserts task-specific actions or edits.
 *
 * `decide` is pure (history + found action → what happens), so every branch is testable
 * without a model; an environment supplies only its rules (which tool is offered, what counts
 * as having acted, which repeats are loops) and the words of its hints.
 */

/** An action as an environment parses it: a kind, and whatever else it carries. */
export interface EnvironmentAction {
  kind: string;
}

/** A step's action as the completion's text yielded it, or why it yielded none. */
export type FoundStep<A> = { ok: true; action: A } | { ok: false; error: string };

/** The recovery outcomes every environment shares; the final action's three are named per environment. */
export type SharedOutcome = 'executed' | 'format_error' | 'repeat_suppressed' | 'repeated_action' | 'format_ended';

/** What an environment calls its final action's outcomes: accepted, rejected once, and accepted anyway. */
export interface FinalNames<O extends string> {
  accepted: O;
  rejected: O;
  unacted: O;
}

export interface RecoveryRules<A extends EnvironmentAction, O extends string> {
  /** Whether the action ends the episode (submit, answer). */
  isFinal(action: A): boolean;
  /** Whether the episode offers the action's tool (a profile may lack the editor, or keystrokes). */
  offers(action: A): boolean;
  /** The profile, as a step's error names it when its tool is not offered. */
  profile: string;
  /** Whether running the action twice in a row is a loop rather than a wait or an interrupt. */
  repeatable(action: A): boolean;
  /** Whether the model has done what the final action needs (changed a source file, run something, searched). */
  hasActed(history: readonly RecoveryStep<A, O>[]): boolean;
  names: FinalNames<O>;
  hints: { format(error: string): string; tool(action: A): string; final: string; repeat: string };
}

/** What recovery reads of a step before. */
export interface RecoveryStep<A, O extends string> {
  action: A | null;
  outcome: O | SharedOutcome;
}

export type Decision<A, O extends string> =
  | { kind: 'execute'; action: A }
  | { kind: 'hint'; outcome: 'format_error' | 'repeat_suppressed' | O; message: string }
  /** `termination` is the episode's ending as results count it (a format ending counts as `format_error`). */
  | { kind: 'end'; outcome: 'repeated_action' | 'format_ended' | O; termination: string };

/** What the harness does with a step's action, given the steps before it. */
export function decide<A extends EnvironmentAction, O extends string>(
  rules: RecoveryRules<A, O>,
  history: readonly RecoveryStep<A, O>[],
  found: FoundStep<A>,
): Decision<A, O> {
  const hinted = (outcome: string) => history.some((s) => s.outcome === outcome);
  const formatEnd = { kind: 'end', outcome: 'format_ended', termination: 'format_error' } as const;
  if (!found.ok)
    return hinted('format_error') ? formatEnd : { kind: 'hint', outcome: 'format_error', message: rules.hints.format(found.error) };
  const { action } = found;
  if (!rules.offers(action))
    return hinted('format_error') ? formatEnd : { kind: 'hint', outcome: 'format_error', message: rules.hints.tool(action) };
  if (rules.isFinal(action)) {
    const { accepted, rejected, unacted } = rules.names;
    if (rules.hasActed(history)) return { kind: 'end', outcome: accepted, termination: accepted };
    return hinted(rejected)
      ? { kind: 'end', outcome: unacted, termination: unacted }
      : { kind: 'hint', outcome: rejected, message: rules.hints.final };
  }
  const previous = history.at(-1);
  if (
    rules.repeatable(action) &&
    previous?.action &&
    (previous.outcome === 'executed' || previous.outcome === 'repeat_suppressed') &&
    JSON.stringify(previous.action) === JSON.stringify(action)
  )
    return hinted('repeat_suppressed')
      ? { kind: 'end', outcome: 'repeated_action', termination: 'repeated_action' }
      : { kind: 'hint', outcome: 'repeat_suppressed', message: rules.hints.repeat };
  return { kind: 'execute', action };
}

/** Why a step has no usable action (none found, or a tool the profile lacks), or null. */
export function stepError<A extends EnvironmentAction>(
  rules: Pick<RecoveryRules<A, string>, 'offers' | 'profile'>,
  found: FoundStep<A>,
): string | null {
  if (!found.ok) return found.error;
  return rules.offers(found.action) ? null : `the ${found.action.kind} tool is not in the ${rules.profile} profile`;
}
