/**
 * OpenHands' own format: an action is the tool call's JSON arguments, which do not name
 * their tool (the gold action tells which: `str_replace_editor` arguments carry a path).
 */
import type { TrajectoryAction } from '../schema/trajectory.ts';
import { type NativeFormat, plainOutput, UnparsableAction } from './action-format.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../util/json-depth.ts';
import { bashAction, editorAction, submitAction } from './actions.ts';

function parseToolArguments(text: string, like?: TrajectoryAction): TrajectoryAction {
  let args: Record<string, unknown>;
  try {
    args = JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    throw new UnparsableAction(`tool-call arguments are not JSON: ${error instanceof Error ? error.message : error}`);
  }
  // A model's output: anything reading a value nested past the stack's reach would crash the run.
  if (nestsDeeperThan(args)) throw new UnparsableAction(`tool-call arguments nest deeper than ${MAX_JSON_DEPTH} levels`);
  if (args === null || typeof args !== 'object' || Array.isArray(args))
    throw new UnparsableAction('tool-call arguments are not a JSON object');
  if (like?.tool === 'submit') return submitAction(text, args);
  if (like?.tool === 'str_replace_editor' || 'path' in args) return editorAction(text, args);
  return bashAction(text, String(args.command ?? ''));
}

export const openHands = {
  name: 'native:openhands',
  scaffold: 'openhands',
  // A native context joins the log's messages with blank lines, so the arguments end at the first one.
  stops: ['\n\n'],
  keepStop: false,
  recordedOutput: plainOutput,
  parse: parseToolArguments,
} as const satisfies NativeFormat;
