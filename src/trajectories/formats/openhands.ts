/**
 * OpenHands event lists: a JSON array of events (`{id, source, action, args, …}` for
 * actions; `{cause, observation, content, extras}` for their observations). Actions
 * `run`, `edit` (str_replace_editor commands), `read`, `write` and `finish` become steps;
 * the agent's `think`/`message` events become the thought of its next action.
 */
import { InputError } from '../../errors.ts';
import type { Trajectory, TrajectoryStep } from '../../schema/trajectory.ts';
import { bashAction, editorAction, submitAction } from '../../formats/actions.ts';
import { openHands } from '../../formats/openhands.ts';

interface Event {
  id?: number;
  source?: string;
  action?: string;
  observation?: string;
  args?: Record<string, unknown>;
  content?: string;
  message?: string;
  cause?: number;
  tool_call_metadata?: {
    model_response?: { choices?: Array<{ message?: { tool_calls?: Array<{ function?: { arguments?: string } }> } }> };
  };
}

export function looksLikeOpenHands(data: unknown): boolean {
  return Array.isArray(data) && data.length > 0 && data.some((e) => typeof e === 'object' && e !== null && 'action' in e && 'source' in e);
}

/** The tool-call arguments the model wrote, when the event kept them; else the args. */
function actionText(event: Event): string {
  const calls = event.tool_call_metadata?.model_response?.choices?.[0]?.message?.tool_calls;
  const written = calls?.[0]?.function?.arguments;
  if (typeof written === 'string') return written;
  const { thought: _thought, ...args } = event.args ?? {};
  return JSON.stringify(args);
}

export function importOpenHands(data: unknown, file: string): Trajectory {
  if (!Array.isArray(data)) throw new InputError({ file }, 'expected a JSON array of OpenHands events');
  const events = data as Event[];
  const observations = new Map<number, Event>();
  for (const e of events) if (e.observation && e.cause !== undefined) observations.set(e.cause, e);
  const steps: TrajectoryStep[] = [];
  const preamble: Array<{ role: string; content: string }> = [];
  let pendingThought = '';
  events.forEach((event, i) => {
    // Text that becomes the task, a thought or an observation must be text, not a value String() would flatten.
    for (const [value, field] of [
      [event.content, `${i}.content`],
      [event.message, `${i}.message`],
      [event.args?.content, `${i}.args.content`],
      [event.args?.thought, `${i}.args.thought`],
    ] as const) {
      if (value !== undefined && value !== null && typeof value !== 'string')
        throw new InputError({ file, field }, `expected a string, got ${JSON.stringify(value)?.slice(0, 80)}`);
    }
    if (!event.action) return;
    const args = event.args ?? {};
    const thought = [pendingThought, typeof args.thought === 'string' ? args.thought : ''].filter(Boolean).join('\n').trim();
    if (event.source === 'user' && event.action === 'message') {
      preamble.push({ role: 'user', content: String(args.content ?? event.message ?? '') });
      return;
    }
    if (event.source !== 'agent') return;
    if (event.action === 'think' || event.action === 'message') {
      pendingThought = [pendingThought, String(args.thought ?? args.content ?? event.message ?? '')].filter(Boolean).join('\n');
      return;
    }
    const text = actionText(event);
    let action;
    switch (event.action) {
      case 'run':
        action = bashAction(text, String(args.command ?? ''));
        break;
      case 'edit':
        action = editorAction(text, { ...args, command: args.command ?? (args.file_text !== undefined ? 'create' : 'str_replace') });
        break;
      case 'read':
        action = editorAction(text, { command: 'view', path: args.path, ...(args.view_range ? { view_range: args.view_range } : {}) });
        break;
      case 'write':
        action = editorAction(text, { command: 'create', path: args.path, file_text: args.content });
        break;
      case 'finish':
        action = submitAction(text, args);
        break;
      default:
        throw new InputError({ file, field: `${i}.action` }, `unsupported OpenHands action "${event.action}"`);
    }
    pendingThought = '';
    const obs = event.id !== undefined ? observations.get(event.id) : undefined;
    steps.push({
      index: steps.length,
      thought,
      response: thought ? `${thought}\n${text}` : text,
      action,
      observation: obs ? String(obs.content ?? '') : null,
    });
  });
  const finish = [...events].reverse().find((e) => e.action === 'finish');
  return {
    format: openHands.scaffold,
    source: file,
    problemStatement: preamble[0]?.content ?? null,
    preamble,
    steps,
    submission: finish ? String(finish.args?.final_thought ?? finish.args?.message ?? '') || null : null,
  };
}
