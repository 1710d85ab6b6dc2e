/**
 * A SWE-agent run kept only as its chat history (nebius/SWE-agent-trajectories'
 * `trajectory` of `{role: system|user|ai, text}`, SWE-smith's `ticks` rows of
 * `{role, content}`), rebuilt as the `.traj` object SWE-agent writes, so the SWE-agent
 * importer reads it: each model turn's action is the command block SWE-agent's
 * `thought_action` parser takes, its observation the next environment message.
 */
export interface ChatTurn {
  role: string;
  content: string;
}

/**
 * SWE-agent's `ThoughtActionParser` (sweagent/tools/parsing.py): the action is the last
 * top-level ``` block; the thought is the text around it. Undefined when there is none.
 */
export function thoughtAction(message: string): { thought: string; action: string } | undefined {
  const fence = /^```(\S*)\s*\n|^```\s*$/gm;
  const stack: RegExpExecArray[] = [];
  let last: [RegExpExecArray, RegExpExecArray] | undefined;
  for (const match of message.matchAll(fence)) {
    const info = match[1];
    if (stack.length && !info) {
      const start = stack.pop()!;
      if (!stack.length) last = [start, match];
    } else if (info !== undefined) {
      stack.push(match);
    }
  }
  if (!last) return undefined;
  const [start, end] = last;
  return {
    thought: message.slice(0, start.index) + message.slice(end.index + end[0].length),
    action: message.slice(start.index + start[0].length, end.index),
  };
}

/** Roles the datasets use for the model's turns. */
const MODEL_ROLES = new Set(['assistant', 'ai']);

/**
 * The `.traj` object for a chat history. A model turn without a command block is kept as
 * a step whose action is empty (SWE-agent would have asked again; nothing ran).
 */
export function sweAgentTrajFromChat(turns: readonly ChatTurn[], submission: string | null): unknown {
  const trajectory = turns.flatMap((turn, i) => {
    if (!MODEL_ROLES.has(turn.role)) return [];
    const reply = turns[i + 1]; // what the environment answered, unless the model spoke again
    const parsed = thoughtAction(turn.content);
    return [
      {
        action: parsed?.action ?? '',
        thought: parsed?.thought ?? turn.content,
        response: turn.content,
        observation: reply && !MODEL_ROLES.has(reply.role) ? reply.content : null,
      },
    ];
  });
  const history = turns.map((t) => ({ role: MODEL_ROLES.has(t.role) ? 'assistant' : t.role, content: t.content }));
  return { trajectory, history, info: { submission } };
}
