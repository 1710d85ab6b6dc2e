/**
 * A chat whose model turns call tools (`tool_calls`, answered by `role: "tool"` messages):
 * SWE-Gym's OpenHands trajectories (`execute_bash`, `str_replace_editor`, `finish`) and
 * SWE-smith's `tool` rows (`bash`, `str_replace_editor`, `submit`). Rebuilt as the
 * OpenHands event list those calls stand for, so the OpenHands importer reads them: one
 * action event per call (its arguments kept as the model wrote them), one observation
 * event per tool reply.
 */
import { InputError } from '../../errors.ts';
import { contentText } from '../formats/mini-swe-agent.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../util/json-depth.ts';

export interface ToolCallMessage {
  role: string;
  content?: unknown;
  tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }> | null;
  tool_call_id?: string | null;
  /** SWE-agent's histories name the answered calls in a list. */
  tool_call_ids?: string[] | null;
}

export function hasToolCalls(messages: readonly ToolCallMessage[]): boolean {
  return messages.some((m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0);
}

/** The OpenHands action each tool stands for. */
const ACTIONS: Record<string, string> = {
  execute_bash: 'run',
  bash: 'run',
  str_replace_editor: 'edit',
  finish: 'finish',
  submit: 'finish',
};

function parseArguments(text: string | undefined, source: string, field: string): Record<string, unknown> {
  if (text === undefined || text === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InputError({ file: source, field }, `tool arguments are not valid JSON: ${text.slice(0, 80)}`, { cause: error });
  }
  if (nestsDeeperThan(parsed))
    throw new InputError({ file: source, field }, `tool arguments nest deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  throw new InputError({ file: source, field }, `tool arguments must be a JSON object, got ${text.slice(0, 80)}`);
}

export function openHandsEventsFromToolCalls(messages: readonly ToolCallMessage[], source: string, field: string): unknown[] {
  const events: Array<Record<string, unknown>> = [];
  const actionIds = new Map<string, number>();
  // Calls not answered yet, oldest first: a reply that names no known call answers the oldest.
  const pending: number[] = [];
  messages.forEach((message, i) => {
    const text = contentText(message.content);
    if (message.role === 'user') {
      events.push({ id: events.length, source: 'user', action: 'message', args: { content: text } });
    } else if (message.role === 'tool') {
      const named = message.tool_call_id ?? message.tool_call_ids?.[0];
      const cause = (named === undefined ? undefined : actionIds.get(named)) ?? pending[0];
      if (cause === undefined)
        throw new InputError(
          { file: source, field: `${field}.${i}` },
          `a tool reply to no earlier tool call (${JSON.stringify(named ?? null)})`,
        );
      if (pending.includes(cause)) pending.splice(pending.indexOf(cause), 1);
      events.push({ id: events.length, cause, observation: 'run', content: text });
    } else if (message.role === 'assistant') {
      const calls = message.tool_calls ?? [];
      if (!calls.length) {
        // A turn of words only: the thought of the agent's next action.
        if (text) events.push({ id: events.length, source: 'agent', action: 'message', args: { content: text } });
        return;
      }
      // The turn's words become the thought of its first call, as OpenHands records them.
      if (text) events.push({ id: events.length, source: 'agent', action: 'message', args: { content: text } });
      calls.forEach((call, k) => {
        const at = `${field}.${i}.tool_calls.${k}`;
        const name = call.function?.name ?? '';
        const action = ACTIONS[name];
        if (!action)
          throw new InputError(
            { file: source, field: `${at}.function.name` },
            `unsupported tool "${name}" (known: ${Object.keys(ACTIONS).join(', ')})`,
          );
        const args = parseArguments(call.function?.arguments, source, `${at}.function.arguments`);
        if (call.id) actionIds.set(call.id, events.length);
        pending.push(events.length);
        events.push({
          id: events.length,
          source: 'agent',
          action,
          args,
          tool_call_metadata: { model_response: { choices: [{ message: { tool_calls: [call] } }] } },
        });
      });
    }
  });
  return events;
}
