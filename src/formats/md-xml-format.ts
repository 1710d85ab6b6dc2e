/**
 * ASAP's md+xml as a probe item format: `md+xml` items (any scaffold's trajectory
 * rendered as an ASAP transcript) and `native:asap` items (ASAP logs, whose own text is
 * md+xml). Also the two conversions between md+xml actions and normalized ones.
 */
import type { TrajectoryAction } from '../schema/trajectory.ts';
import { type ActionFormat, type NativeFormat, plainOutput, UnparsableAction } from './action-format.ts';
import { bashAction, editorAction, submitAction } from './actions.ts';
import { asapFormat } from './asap-transcripts.ts';
import { type Action, MD_XML_STOPS } from './md-xml.ts';
import { findAction, parseAction } from './md-xml-parse.ts';

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

/** The md+xml action for a normalized one; SWE-agent's windowed-editor commands stay as written, inside <bash>. */
export function toMdXml(action: TrajectoryAction): Action {
  const a = action.args;
  if (action.tool === 'submit') return { kind: 'submit' };
  if (action.tool === 'bash') return { kind: 'bash', command: String(a.command ?? '') };
  if (action.tool === 'str_replace_editor' && ['view', 'create', 'str_replace', 'insert'].includes(String(a.command))) {
    const out: Action = { kind: 'str_replace_editor', command: a.command as 'view', path: String(a.path ?? '') };
    if (a.file_text !== undefined) out.fileText = String(a.file_text);
    if (a.old_str !== undefined) out.oldStr = String(a.old_str);
    if (a.new_str !== undefined) out.newStr = String(a.new_str);
    if (a.insert_line !== undefined) out.insertLine = Number(a.insert_line);
    return out;
  }
  return { kind: 'bash', command: action.text.replace(/\n+$/, '') };
}

/** The first complete action element in the text. */
function parseMdXml(text: string): TrajectoryAction {
  const found = findAction(text);
  if (!found) throw new UnparsableAction('no complete md+xml action element');
  const element = text.slice(found.start, found.end);
  try {
    return normalizeMdXml(parseAction(element), element);
  } catch (error) {
    throw new UnparsableAction(error instanceof Error ? error.message : String(error));
  }
}

const transcript = asapFormat('md+xml');

const mdXmlActions = {
  stops: MD_XML_STOPS,
  keepStop: true,
  recordedOutput: plainOutput,
  parse: parseMdXml,
  // The harness answers as an ASAP episode does: the observation, then the cue of the next step.
  rollout: { observe: (output: string) => transcript.renderObservation(output) + transcript.cue, nextStops: MD_XML_STOPS },
} satisfies Omit<ActionFormat, 'name'>;

/** Any scaffold's trajectory up to T*, rendered as an ASAP transcript. */
export const mdXml = { name: 'md+xml', ...mdXmlActions } as const satisfies ActionFormat;

/** ASAP logs, probed in their own (md+xml) text. */
export const asapLog = { name: 'native:asap', scaffold: 'asap', ...mdXmlActions } as const satisfies NativeFormat;
