/**
 * Turning an agent's action text into a normalized action: which tool runs it, what
 * kind of thing it does, and its arguments. The text itself is always kept verbatim.
 */
import type { ActionKind, TrajectoryAction } from '../schema/trajectory.ts';

/** Commands with which mini-swe-agent (v1, v2) and similar scaffolds end a run. */
const SUBMIT_SENTINELS = ['MINI_SWE_AGENT_FINAL_OUTPUT', 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT'];

export function bashAction(text: string, command: string): TrajectoryAction {
  const submits = SUBMIT_SENTINELS.some((s) => new RegExp(`^\\s*echo\\s+['"]?${s}\\b`).test(command));
  return { text, kind: submits ? 'submit' : 'bash', tool: submits ? 'submit' : 'bash', args: { command } };
}

const EDITOR_KINDS: Record<string, ActionKind> = {
  view: 'view',
  create: 'create',
  str_replace: 'edit',
  insert: 'edit',
  undo_edit: 'edit',
};

/** `str_replace_editor` (SWE-agent, OpenHands, R2E-Gym's file_editor) with its arguments. */
export function editorAction(text: string, args: Record<string, unknown>): TrajectoryAction {
  const command = String(args.command ?? '');
  return { text, kind: EDITOR_KINDS[command] ?? 'other', tool: 'str_replace_editor', args };
}

export function submitAction(text: string, args: Record<string, unknown> = {}): TrajectoryAction {
  return { text, kind: 'submit', tool: 'submit', args };
}

/** Splits a command line the way a POSIX shell splits words (quotes and backslashes). */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      word += line.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1]!)) i++;
        word += line[i++]!;
      }
      if (i >= line.length) throw new Error('unterminated double quote');
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i]!;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

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
        tool: 'swe-agent',
        args: { command: 'edit', start: Number(ranged[1]), end: Number(ranged[2]), replacement: ranged[3] },
      };
    }
    const words = shellWords(trimmed);
    if (words.length >= 3) {
      return {
        text,
        kind: 'edit',
        tool: 'swe-agent',
        args: { command: 'edit_replace', search: words[1], replace: words[2], replace_all: words[3] === 'True' },
      };
    }
  }
  if (name === 'str_replace_editor') return editorAction(text, strReplaceEditorArgs(shellWords(trimmed).slice(1)));
  const kind = SWE_AGENT_KINDS[name];
  if (kind === 'submit') return submitAction(text, { command: 'submit' });
  if (kind) return { text, kind, tool: 'swe-agent', args: { command: name, argv: shellWords(trimmed).slice(1) } };
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
