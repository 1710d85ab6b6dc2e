/**
 * SWE-agent's own format: a turn is a thought, then one command in a ``` fence, which
 * SWE-agent strips before running it. Commands are its windowed editor (run by the
 * sandbox's editor tool as tool `swe-agent`), `str_replace_editor …`, or plain bash; the
 * recorded observation ends with SWE-agent's `(Open file: …)(Current directory: …)` prompt.
 */
import type { ActionKind, TrajectoryAction } from '../schema/trajectory.ts';
import { plainOutput, type NativeFormat } from './action-format.ts';
import { bashAction, editorAction, shellWords, submitAction } from './actions.ts';

/** The tool of SWE-agent's windowed-editor commands (`open`, `goto`, `edit N:M`, …), run by the sandbox's editor. */
export const SWE_AGENT_TOOL = 'swe-agent';

const SWE_AGENT_KINDS: Record<string, ActionKind> = {
  open: 'view',
  goto: 'navigate',
  scroll_up: 'navigate',
  scroll_down: 'navigate',
  create: 'create',
  edit: 'edit',
  find_file: 'search',
  search_dir: 'search',
  search_file: 'search',
  submit: 'submit',
};

/**
 * A SWE-agent command: the windowed editor (`open`, `goto`, `scroll_up/down`, `create`,
 * `edit N:M … end_of_edit` or `edit 'search' 'replace' [replace_all]`, `find_file`,
 * `search_dir`, `search_file`, `submit`), `str_replace_editor …`, or plain bash.
 */
export function sweAgentAction(text: string): TrajectoryAction {
  try {
    return parseSweAgentCommand(text);
  } catch {
    // Unbalanced quotes: the shell will say so when the line runs, as it would in SWE-agent.
    return bashAction(text, text.replace(/\n+$/, ''));
  }
}

function parseSweAgentCommand(text: string): TrajectoryAction {
  const trimmed = text.replace(/\n+$/, '');
  const name = /^\s*(\S+)/.exec(trimmed)?.[1] ?? '';
  if (name === 'edit') {
    const ranged = /^\s*edit\s+(\d+):(\d+)\n([\s\S]*?)\n?end_of_edit\s*$/.exec(trimmed);
    if (ranged) {
      return {
        text,
        kind: 'edit',
        tool: SWE_AGENT_TOOL,
        args: { command: 'edit', start: Number(ranged[1]), end: Number(ranged[2]), replacement: ranged[3] },
      };
    }
    const words = shellWords(trimmed);
    if (words.length >= 3) {
      return {
        text,
        kind: 'edit',
        tool: SWE_AGENT_TOOL,
        args: { command: 'edit_replace', search: words[1], replace: words[2], replace_all: words[3] === 'True' },
      };
    }
  }
  if (name === 'str_replace_editor') return editorAction(text, strReplaceEditorArgs(shellWords(trimmed).slice(1)));
  const kind = SWE_AGENT_KINDS[name];
  if (kind === 'submit') return submitAction(text, { command: 'submit' });
  if (kind) return { text, kind, tool: SWE_AGENT_TOOL, args: { command: name, argv: shellWords(trimmed).slice(1) } };
  return bashAction(text, trimmed);
}

/** `str_replace_editor COMMAND PATH [--flag value …]` as SWE-agent renders tool calls. */
function strReplaceEditorArgs(words: string[]): Record<string, unknown> {
  const [command, path, ...rest] = words;
  const args: Record<string, unknown> = { command, path };
  for (let i = 0; i < rest.length; i++) {
    const flag = /^--(\w+)$/.exec(rest[i]!);
    if (!flag) continue;
    const values: string[] = [];
    while (i + 1 < rest.length && !/^--\w+$/.test(rest[i + 1]!)) values.push(rest[++i]!);
    args[flag[1]!] = flag[1] === 'view_range' ? values.map(Number) : flag[1] === 'insert_line' ? Number(values[0]) : values.join(' ');
  }
  return args;
}

export const sweAgent = {
  name: 'native:swe-agent',
  scaffold: 'swe-agent',
  stops: ['\n```'],
  // The closing fence is SWE-agent's wrapper, not part of the command.
  keepStop: false,
  recordedOutput: (observation) =>
    plainOutput(observation).replace(/\n\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*$/, ''),
  parse: (text) => sweAgentAction(/^```\n?([\s\S]*?)\n?```$/.exec(text.trim())?.[1] ?? text),
} as const satisfies NativeFormat;
