/**
 * The transcript formats an ASAP episode can be written in. `md+xml` is the protocol's
 * (design.md); `xml`, `json` and `markdown` exist for the format ablation. Each format says
 * how the task, a step and an observation are written, what text cues the model's next
 * step, which stop strings can end an action, and how to find the action in a completion.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../util/json-depth.ts';
import { type Action, MD_XML_STOPS, OBSERVATION_LIMIT, renderAction, renderObservation, renderTask } from './md-xml.ts';
import { ActionParseError, findAction, parseAction } from './md-xml-parse.ts';

export const ASAP_FORMATS = ['md+xml', 'xml', 'json', 'markdown'] as const;
export type AsapFormatName = (typeof ASAP_FORMATS)[number];

export interface WrittenStep {
  thought: string;
  action: Action;
}

/** What a model's completion held: its step and where the action ended, or why there is none. */
export type Extracted = { ok: true; step: WrittenStep; end: number } | { ok: false; complete: boolean; error: string };

export interface AsapFormat {
  readonly name: AsapFormatName;
  renderTask(problemStatement: string): string;
  /** The cue after which the model writes a step (the prompt always ends with it). */
  readonly cue: string;
  /** A step as the model would write it, after the cue, up to the end of its action. */
  renderStep(step: WrittenStep): string;
  /** The harness's answer to a step (command output, or a hint). */
  renderObservation(output: string): string;
  /** Strings at which a completion may have finished its action. */
  readonly stops: string[];
  /** A stop hit with no complete action yet (a fence that closed prose) lets sampling go on. */
  readonly continueAfterStop: boolean;
  /**
   * The first complete action in a completion. `complete: false` means the text so far
   * ends inside an unfinished action or before any, so sampling may go on.
   */
  extract(completion: string): Extracted;
}

function truncated(output: string): string {
  return output.length > OBSERVATION_LIMIT
    ? `${output.slice(0, OBSERVATION_LIMIT)}\n[... observation truncated: ${output.length - OBSERVATION_LIMIT} more characters ...]`
    : output;
}

const XML_STOPS = [...MD_XML_STOPS];

/** Finds and parses the first md+xml action element; the thought is what precedes it. */
function extractXmlAction(completion: string, thoughtOf: (before: string) => string): Extracted {
  const found = findAction(completion);
  if (!found) {
    const opened = /<bash>|<str_replace_editor\b/.test(completion);
    return {
      ok: false,
      complete: false,
      error: opened ? 'the action element is not closed' : 'no action element (<bash>, <str_replace_editor>, <submit/>)',
    };
  }
  try {
    const action = parseAction(completion.slice(found.start, found.end));
    return { ok: true, step: { thought: thoughtOf(completion.slice(0, found.start)), action }, end: found.end };
  } catch (error) {
    if (!(error instanceof ActionParseError)) throw error;
    return { ok: false, complete: true, error: error.message };
  }
}

const mdXml: AsapFormat = {
  name: 'md+xml',
  renderTask,
  cue: '\n## Thinking\n',
  renderStep: (step) => `${step.thought.trim()}\n${renderAction(step.action)}`,
  renderObservation: (output) => `\n${renderObservation(output)}\n`,
  stops: XML_STOPS,
  continueAfterStop: true,
  extract: (completion) => extractXmlAction(completion, (before) => before.trim()),
};

const xml: AsapFormat = {
  name: 'xml',
  renderTask: (problemStatement) => `<task>\n${problemStatement.trimEnd()}\n</task>\n`,
  cue: '\n<thinking>\n',
  renderStep: (step) => `${step.thought.trim()}\n</thinking>\n${renderAction(step.action)}`,
  renderObservation: (output) => `\n${renderObservation(output)}\n`,
  stops: XML_STOPS,
  continueAfterStop: true,
  extract: (completion) => extractXmlAction(completion, (before) => before.replace(/<\/thinking>\s*$/, '').trim()),
};

/** Where the JSON value starting at `start` ends (exclusive), or -1 when the text ends first. */
export function jsonValueEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/** A json-format action object as an Action, or a message saying what is wrong with it. */
function jsonAction(value: unknown): Action | string {
  if (typeof value !== 'object' || value === null) return '"action" must be an object';
  const a = value as Record<string, unknown>;
  if (a.tool === 'submit') return { kind: 'submit' };
  if (a.tool === 'bash') return typeof a.command === 'string' ? { kind: 'bash', command: a.command } : 'bash needs a string "command"';
  if (a.tool === 'str_replace_editor') {
    const command = a.command;
    if (command !== 'view' && command !== 'create' && command !== 'str_replace' && command !== 'insert')
      return 'str_replace_editor needs "command": view|create|str_replace|insert';
    if (typeof a.path !== 'string' || !a.path) return 'str_replace_editor needs a "path"';
    const action: Action = { kind: 'str_replace_editor', command, path: a.path };
    if (typeof a.file_text === 'string') action.fileText = a.file_text;
    if (typeof a.old_str === 'string') action.oldStr = a.old_str;
    if (typeof a.new_str === 'string') action.newStr = a.new_str;
    if (a.insert_line !== undefined) action.insertLine = Number(a.insert_line);
    return action;
  }
  return '"tool" must be bash, str_replace_editor or submit';
}

function jsonActionObject(action: Action): Record<string, unknown> {
  switch (action.kind) {
    case 'submit':
      return { tool: 'submit' };
    case 'bash':
      return { tool: 'bash', command: action.command };
    case 'str_replace_editor':
      return {
        tool: 'str_replace_editor',
        command: action.command,
        path: action.path,
        ...(action.fileText !== undefined ? { file_text: action.fileText } : {}),
        ...(action.insertLine !== undefined ? { insert_line: action.insertLine } : {}),
        ...(action.oldStr !== undefined ? { old_str: action.oldStr } : {}),
        ...(action.newStr !== undefined ? { new_str: action.newStr } : {}),
      };
  }
}

/** Each step is one JSON line; the model continues a line the cue opened. */
const JSON_CUE = '\n{"thought":"';

const json: AsapFormat = {
  name: 'json',
  renderTask: (problemStatement) => JSON.stringify({ task: problemStatement.trimEnd() }),
  cue: JSON_CUE,
  renderStep: (step) => JSON.stringify({ thought: step.thought.trim(), action: jsonActionObject(step.action) }).slice(JSON_CUE.length - 1),
  renderObservation: (output) => `\n${JSON.stringify({ observation: truncated(output) })}`,
  stops: ['\n'],
  continueAfterStop: false,
  extract: (completion) => {
    const text = JSON_CUE.slice(1) + completion;
    const end = jsonValueEnd(text, 0);
    if (end < 0) return { ok: false, complete: false, error: 'the JSON step object is not closed' };
    let value: unknown;
    try {
      value = JSON.parse(text.slice(0, end));
    } catch (error) {
      return { ok: false, complete: true, error: `not valid JSON: ${error instanceof Error ? error.message : error}` };
    }
    if (nestsDeeperThan(value)) return { ok: false, complete: true, error: `the JSON step nests deeper than ${MAX_JSON_DEPTH} levels` };
    const step = value as Record<string, unknown>;
    const action = jsonAction(step.action);
    if (typeof action === 'string') return { ok: false, complete: true, error: action };
    return { ok: true, step: { thought: typeof step.thought === 'string' ? step.thought : '', action }, end: end - (JSON_CUE.length - 1) };
  },
};

/** Fenced blocks whose info string names a tool are actions; any other fence is prose. */
const TOOL_FENCE = /^```(bash|str_replace_editor|submit)[ \t]*\n/m;

function markdownAction(tool: string, body: string): Action | string {
  if (tool === 'submit') return { kind: 'submit' };
  if (tool === 'bash') return { kind: 'bash', command: body };
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return `the str_replace_editor block must hold a JSON object: ${error instanceof Error ? error.message : error}`;
  }
  if (nestsDeeperThan(value)) return `the str_replace_editor block nests deeper than ${MAX_JSON_DEPTH} levels`;
  return jsonAction({ ...(value as object), tool: 'str_replace_editor' });
}

const markdown: AsapFormat = {
  name: 'markdown',
  renderTask: (problemStatement) => `# Task\n\n${problemStatement.trimEnd()}\n`,
  cue: '\n## Thinking\n',
  renderStep: (step) => {
    const a = step.action;
    let body = '';
    if (a.kind === 'bash') body = `${a.command.replace(/\n+$/, '')}\n`;
    if (a.kind === 'str_replace_editor') {
      const { tool: _tool, ...args } = jsonActionObject(a);
      body = `${JSON.stringify(args)}\n`;
    }
    return `${step.thought.trim()}\n\n\`\`\`${a.kind}\n${body}\`\`\``;
  },
  renderObservation: (output) => `\n\n### Observation\n\`\`\`\n${truncated(output).replace(/\n+$/, '')}\n\`\`\`\n`,
  stops: ['\n```'],
  continueAfterStop: true,
  extract: (completion) => {
    const open = TOOL_FENCE.exec(completion);
    if (!open) return { ok: false, complete: false, error: 'no ```bash, ```str_replace_editor or ```submit block' };
    const bodyStart = open.index + open[0].length;
    const close = completion.slice(bodyStart - 1).search(/\n```/);
    if (close < 0) return { ok: false, complete: false, error: 'the action block is not closed' };
    const closeAt = bodyStart - 1 + close;
    const action = markdownAction(open[1]!, completion.slice(bodyStart, Math.max(bodyStart, closeAt)));
    if (typeof action === 'string') return { ok: false, complete: true, error: action };
    return { ok: true, step: { thought: completion.slice(0, open.index).trim(), action }, end: closeAt + 4 };
  },
};

const FORMATS: Record<AsapFormatName, AsapFormat> = { 'md+xml': mdXml, xml, json, markdown };

/**
 * A transcript: `head` (the task, and the reference prefix where there is one), then each
 * step as the model wrote it, after the format's cue, with the harness's observation (none on
 * the step that ended the episode). A prompt for the next step is this plus `format.cue`.
 */
export function transcriptText(
  head: string,
  steps: ReadonlyArray<{ completion: string; observation: string | null }>,
  format: AsapFormat,
): string {
  let text = head;
  for (const step of steps) {
    text += format.cue + step.completion;
    if (step.observation !== null) text += format.renderObservation(step.observation);
  }
  return text;
}

export function asapFormat(name: AsapFormatName): AsapFormat {
  return FORMATS[name];
}
