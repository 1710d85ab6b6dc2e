/** ASAP logs: the `md+xml` transcript text itself. */
import { InputError } from '../../errors.ts';
import type { Trajectory } from '../../schema/trajectory.ts';
import { asapLog, normalizeMdXml } from '../../formats/md-xml-format.ts';
import { ActionParseError, parseTranscript } from '../../formats/md-xml-parse.ts';

export function looksLikeAsap(text: string): boolean {
  return text.startsWith('# Task\n<task>\n');
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
    format: asapLog.scaffold,
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
