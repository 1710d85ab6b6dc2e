/**
 * mini-swe-agent trajectories: v1 (`mini-swe-agent-1`, ```bash blocks) and v2
 * (`mini-swe-agent-1.1`: ```mswea_bash_command blocks in text mode; `tool_calls` with
 * `extra.actions` in tool-call mode; a final `role: "exit"` message). Either a bare list
 * of messages or `{info, messages, trajectory_format}`.
 */
import { InputError } from '../../errors.ts';
import { bashAction } from '../../formats/actions.ts';
import { fencedCommands, miniSweAgentV1, miniSweAgentV2 } from '../../formats/mini-swe-agent.ts';
import type { Trajectory, TrajectoryStep } from '../../schema/trajectory.ts';

type MiniSweAgentScaffold = (typeof miniSweAgentV1 | typeof miniSweAgentV2)['scaffold'];

interface Message {
  role: string;
  content: unknown;
  tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: string } }>;
  extra?: { actions?: Array<{ command?: string; tool_call_id?: string }>; submission?: string; exit_status?: string };
}

/** Message content as text (v2 may store a list of content parts). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === 'string' ? p : typeof p?.text === 'string' ? p.text : '')).join('');
  return content == null ? '' : JSON.stringify(content);
}

/**
 * Refuses a message whose content is not text (a string, a list of content parts, or
 * null): `contentText` would otherwise turn `42` or `{…}` into JSON that reads as the
 * agent's words, and the trajectory would replay, build probes and score as if it were.
 */
export function checkMessageContents(messages: readonly unknown[], file: string, field: string): void {
  messages.forEach((m, i) => {
    const content = (m as { content?: unknown } | null)?.content;
    const at = `${field ? `${field}.` : ''}${i}.content`;
    const isText = (v: unknown) => typeof v === 'string' || v === null || v === undefined;
    if (isText(content)) return;
    if (Array.isArray(content)) {
      content.forEach((part, k) => {
        const text = (part as { text?: unknown } | null)?.text;
        if (typeof part !== 'string' && (typeof part !== 'object' || part === null || !isText(text))) {
          throw new InputError(
            { file, field: `${at}.${k}` },
            `expected a content part (a string or {"type", "text"}), got ${JSON.stringify(part)}`,
          );
        }
      });
      return;
    }
    throw new InputError(
      { file, field: at },
      `expected text (a string or a list of content parts), got ${JSON.stringify(content)?.slice(0, 80)}`,
    );
  });
}

export function looksLikeMiniSweAgent(data: unknown): boolean {
  const messages = Array.isArray(data) ? data : (data as { messages?: unknown })?.messages;
  return (
    Array.isArray(messages) &&
    messages.length > 0 &&
    messages.every((m) => typeof m === 'object' && m !== null && 'role' in m) &&
    (!Array.isArray(data) || !(data as object[]).some((m) => 'action' in m || 'observation' in m))
  );
}

export function miniSweAgentFormat(data: unknown): MiniSweAgentScaffold {
  const declared = (data as { trajectory_format?: string })?.trajectory_format;
  const named = [miniSweAgentV1, miniSweAgentV2].find((f) => f.scaffold === declared);
  if (named) return named.scaffold;
  const messages = (Array.isArray(data) ? data : (data as { messages: Message[] }).messages) as Message[];
  const v2 = messages.some((m) => m.role === 'exit' || m.tool_calls?.length || contentText(m.content).includes('```mswea_bash_command'));
  return (v2 ? miniSweAgentV2 : miniSweAgentV1).scaffold;
}

function problemStatement(task: string): string {
  const pr = /<pr_description>\s*(?:Consider the following PR description:\s*)?([\s\S]*?)\s*<\/pr_description>/.exec(task);
  if (pr) return pr[1]!;
  const issue = /^Please solve this issue: ([\s\S]*?)\n\nYou can execute bash commands/.exec(task);
  return issue ? issue[1]! : task;
}

export function importMiniSweAgent(data: unknown, file: string, format: MiniSweAgentScaffold): Trajectory {
  const messages = (Array.isArray(data) ? data : (data as { messages?: unknown })?.messages) as Message[] | undefined;
  if (!Array.isArray(messages)) throw new InputError({ file, field: 'messages' }, 'expected a list of chat messages');
  checkMessageContents(messages, file, Array.isArray(data) ? '' : 'messages');
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  const preamble = messages
    .slice(0, firstAssistant < 0 ? messages.length : firstAssistant)
    .map((m) => ({ role: m.role, content: contentText(m.content) }));
  const task = preamble.find((m) => m.role === 'user')?.content ?? null;
  const { fence } = format === miniSweAgentV2.scaffold ? miniSweAgentV2 : miniSweAgentV1;
  const steps: TrajectoryStep[] = [];
  let submission = (data as { info?: { submission?: string } })?.info?.submission ?? null;

  messages.forEach((message, i) => {
    if (message.role === 'exit') submission = message.extra?.submission ?? (contentText(message.content) || submission);
    if (message.role !== 'assistant') return;
    const content = contentText(message.content);
    const following = messages.slice(i + 1);
    const nextAssistant = following.findIndex((m) => m.role === 'assistant');
    const replies = nextAssistant < 0 ? following : following.slice(0, nextAssistant);
    const actions = message.extra?.actions ?? [];
    if (message.tool_calls?.length || actions.length) {
      // Tool-call mode: one step per call, each observed by its `role: "tool"` reply.
      const calls = actions.length
        ? actions
        : (message.tool_calls ?? []).map((c) => ({ command: parseCommand(c.function?.arguments), tool_call_id: c.id }));
      calls.forEach((call, k) => {
        const command = call.command ?? '';
        const reply =
          replies.find((m) => m.role === 'tool' && (m as { tool_call_id?: string }).tool_call_id === call.tool_call_id) ??
          replies.filter((m) => m.role === 'tool')[k];
        steps.push({
          index: steps.length,
          thought: k === 0 ? content.trim() : '',
          response: content,
          action: bashAction(command, command),
          observation: reply ? contentText(reply.content) : null,
        });
      });
      return;
    }
    const matches = fencedCommands(content, fence);
    const observation = replies.find((m) => m.role === 'user' || m.role === 'tool');
    if (matches.length !== 1) {
      // mini-swe-agent rejected this turn (no block, or several): nothing ran.
      steps.push({
        index: steps.length,
        thought: content.trim(),
        response: content,
        action: { text: '', kind: 'other', tool: 'none', args: { reason: `${matches.length} action blocks` } },
        observation: observation ? contentText(observation.content) : null,
      });
      return;
    }
    const match = matches[0]!;
    steps.push({
      index: steps.length,
      thought: content
        .slice(0, match.index)
        .replace(/^THOUGHT:\s*/, '')
        .trim(),
      response: content,
      action: bashAction(match[0], match[1]!),
      observation: observation ? contentText(observation.content) : null,
    });
  });
  return { format, source: file, problemStatement: task === null ? null : problemStatement(task), preamble, steps, submission };
}

function parseCommand(args: string | undefined): string {
  if (!args) return '';
  try {
    const parsed = JSON.parse(args) as { command?: string };
    return parsed.command ?? args;
  } catch {
    return args;
  }
}
