/**
 * R2E-Gym / DeepSWE's own format: an action is function-call text,
 * `<function=NAME>\n<parameter=KEY>VALUE</parameter>…\n</function>`.
 */
import type { TrajectoryAction } from '../schema/trajectory.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../util/json-depth.ts';
import { type NativeFormat, plainOutput, UnparsableAction } from './action-format.ts';
import { bashAction, editorAction, submitAction } from './actions.ts';

/** `view_range` as the model wrote it (`[1, 40]`): JSON, or the action does not parse (never a crash of the run). */
function viewRange(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UnparsableAction(`view_range is not JSON: ${error instanceof Error ? error.message : error}`);
  }
  if (nestsDeeperThan(value)) throw new UnparsableAction(`view_range nests deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

export const FUNCTION_CALL = /<function=([\w.-]+)>([\s\S]*?)<\/function>/;

/** One function call, parsed; text with none is an action that runs nothing (tool `none`). */
export function functionCallAction(text: string): TrajectoryAction {
  const call = FUNCTION_CALL.exec(text);
  if (!call) return { text, kind: 'other', tool: 'none', args: { reason: 'no <function=…> call' } };
  const name = call[1]!;
  const params: Record<string, unknown> = {};
  for (const p of call[2]!.matchAll(/<parameter=(\w+)>([\s\S]*?)<\/parameter>/g))
    params[p[1]!] = p[2]!.replace(/^\n/, '').replace(/\n$/, '');
  const written = call[0];
  if (name === 'execute_bash' || name === 'bash') return bashAction(written, String(params.cmd ?? params.command ?? ''));
  if (name === 'file_editor' || name === 'str_replace_editor') {
    const args: Record<string, unknown> = { ...params };
    if (typeof params.view_range === 'string') args.view_range = viewRange(params.view_range);
    if (typeof params.insert_line === 'string') args.insert_line = Number(params.insert_line);
    return editorAction(written, args);
  }
  if (name === 'search') return { text: written, kind: 'search', tool: 'search', args: params };
  if (name === 'finish' || name === 'submit') return submitAction(written, params);
  return { text: written, kind: 'other', tool: name, args: params };
}

export const r2eGym = {
  name: 'native:r2e-gym',
  scaffold: 'r2e-gym',
  stops: ['</function>'],
  keepStop: true,
  recordedOutput: plainOutput,
  parse: functionCallAction,
} as const satisfies NativeFormat;
