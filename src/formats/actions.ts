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
