/** ASAP logs: the `md+xml` transcript text itself. */
import { InputError } from '../../errors.ts';
import type { Trajectory, TrajectoryAction } from '../../schema/trajectory.ts';
import { bashAction, editorAction, submitAction } from '../actions.ts';
import type { Action } from '../mdxml.ts';
import { ActionParseError, parseTranscript } from '../mdxml-parse.ts';

export function looksLikeAsap(text: string): boolean {
  return text.startsWith('# Task\n<task>\n');
}

/** An md+xml action as a normalized trajectory action. */
export function normalizeMdXml(action: Action, text: string): TrajectoryAction {
  switch (action.kind) {
    case 'bash':
      return bashAction(text, action.command);
    case 'submit':
      return submitAction(text);
    case 'str_replace_editor': {
      const { kind: _kind, fileText, oldStr, newStr, insertLine, ...rest } = action;
      return editorAction(text, { ...rest, file_text: fileText, old_str: oldStr, new_str: newStr, insert_line: insertLine });
    }
  }
}

export function importAsap(text: string, file: string): Trajectory {
  let parsed;
  try {
    parsed = parseTranscript(text);
  } catch (error) {
    if (error instanceof ActionParseError)
      throw new InputError({ file }, `not a valid md+xml transcript: ${error.message}`, { cause: error });
    throw error;
  }
  return {
    format: 'asap',
    source: file,
    problemStatement: parsed.problemStatement,
    preamble: [],
    steps: parsed.steps.map((s, index) => ({
      index,
      thought: s.thought,
      response: s.response,
      action: normalizeMdXml(s.action, s.actionText),
      observation: s.observation ?? null,
    })),
    submission: null,
  };
}
