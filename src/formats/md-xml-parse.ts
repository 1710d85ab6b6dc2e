/**
 * Parsing the `md+xml` format: one action element out of a model's step, and whole
 * transcripts (ASAP logs). The inverse of `md-xml.ts`.
 */
import type { Action, TranscriptStep } from './md-xml.ts';

export class ActionParseError extends Error {}

const EDITOR_COMMANDS = ['view', 'create', 'str_replace', 'insert'] as const;

/** Where the first action element of `text` starts and ends, or undefined if it has none. */
export function findAction(text: string): { start: number; end: number } | undefined {
  const open = /<bash>|<submit\s*\/>|<str_replace_editor\b[^>]*>/.exec(text);
  if (!open) return undefined;
  if (open[0].startsWith('<submit')) return { start: open.index, end: open.index + open[0].length };
  const closeTag = open[0] === '<bash>' ? '</bash>' : '</str_replace_editor>';
  const close = text.indexOf(closeTag, open.index + open[0].length);
  if (close < 0) return undefined;
  return { start: open.index, end: close + closeTag.length };
}

function child(body: string, tag: string): string | undefined {
  const open = body.indexOf(`<${tag}>`);
  if (open < 0) return undefined;
  const close = body.indexOf(`</${tag}>`, open);
  if (close < 0) throw new ActionParseError(`<${tag}> is not closed`);
  return body.slice(open + tag.length + 2, close);
}

/** Parses one action element (exactly as `renderAction` writes it). */
export function parseAction(element: string): Action {
  const text = element.trim();
  if (/^<submit\s*\/>$/.test(text)) return { kind: 'submit' };
  const bash = /^<bash>\n?([\s\S]*?)\n?<\/bash>$/.exec(text);
  if (bash) return { kind: 'bash', command: bash[1]! };
  const editor = /^<str_replace_editor\b([^>]*)>([\s\S]*)<\/str_replace_editor>$/.exec(text);
  if (!editor) throw new ActionParseError('expected <bash>…</bash>, <str_replace_editor …>…</str_replace_editor> or <submit/>');
  const attrs = Object.fromEntries([...editor[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
  const command = attrs.command as (typeof EDITOR_COMMANDS)[number] | undefined;
  if (!command || !EDITOR_COMMANDS.includes(command))
    throw new ActionParseError(`str_replace_editor needs command=${EDITOR_COMMANDS.join('|')}`);
  if (!attrs.path) throw new ActionParseError('str_replace_editor needs a path');
  const body = editor[2]!;
  const insertLine = child(body, 'insert_line');
  const action: Action = { kind: 'str_replace_editor', command, path: attrs.path };
  const fileText = child(body, 'file_text');
  const oldStr = child(body, 'old_str');
  const newStr = child(body, 'new_str');
  if (fileText !== undefined) action.fileText = fileText;
  if (oldStr !== undefined) action.oldStr = oldStr;
  if (newStr !== undefined) action.newStr = newStr;
  if (insertLine !== undefined) action.insertLine = Number(insertLine.trim());
  return action;
}

export interface ParsedStep extends TranscriptStep {
  /** The action element exactly as written. */
  actionText: string;
  /** The step as written: `## Thinking`, thought and action. */
  response: string;
}

/** Splits an `md+xml` transcript into its task and steps. */
export function parseTranscript(text: string): { problemStatement: string; steps: ParsedStep[] } {
  const task = /^# Task\n<task>\n([\s\S]*?)\n<\/task>\n/.exec(text);
  if (!task) throw new ActionParseError('an md+xml transcript starts with "# Task" and a <task> block');
  const steps: ParsedStep[] = [];
  const chunks = text
    .slice(task[0].length)
    .split(/^## Thinking\n/m)
    .slice(1);
  for (const chunk of chunks) {
    const found = findAction(chunk);
    if (!found) throw new ActionParseError(`step ${steps.length}: no complete action element`);
    const actionText = chunk.slice(found.start, found.end);
    const rest = chunk.slice(found.end);
    const obs = /^\n<observation>\n([\s\S]*?)\n?<\/observation>/.exec(rest);
    steps.push({
      thought: chunk.slice(0, found.start).trim(),
      action: parseAction(actionText),
      actionText,
      response: `## Thinking\n${chunk.slice(0, found.end)}`,
      ...(obs ? { observation: obs[1]! } : {}),
    });
  }
  return { problemStatement: task[1]!, steps };
}
