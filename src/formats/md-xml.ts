/**
 * The ASAP `md+xml` transcript format (design.md): a plain-text log a base model
 * continues. Each step is `## Thinking`, free Markdown, exactly one action element,
 * then the harness's `<observation>`.
 */

/** Observations longer than this are cut, with a visible marker (ASAP default). */
export const OBSERVATION_LIMIT = 100_000;

/** The strings at which an md+xml action element is complete (its closing tag, or `<submit/>`). */
export const MD_XML_STOPS: readonly string[] = ['</bash>', '</str_replace_editor>', '<submit/>'];

export type Action =
  | { kind: 'bash'; command: string }
  | {
      kind: 'str_replace_editor';
      command: 'view' | 'create' | 'str_replace' | 'insert';
      path: string;
      fileText?: string;
      oldStr?: string;
      newStr?: string;
      insertLine?: number;
    }
  | { kind: 'submit' };

export interface TranscriptStep {
  thought: string;
  action: Action;
  /** Absent for the last step of a prefix (the model is about to act) or for `submit`. */
  observation?: string;
}

export function renderTask(problemStatement: string): string {
  return `# Task\n<task>\n${problemStatement.trimEnd()}\n</task>\n`;
}

export function renderAction(action: Action): string {
  switch (action.kind) {
    case 'bash':
      return `<bash>\n${action.command.replace(/\n+$/, '')}\n</bash>`;
    case 'submit':
      return '<submit/>';
    case 'str_replace_editor': {
      const parts = [`<str_replace_editor command="${action.command}" path="${action.path}">`];
      if (action.fileText !== undefined) parts.push(`<file_text>${action.fileText}</file_text>`);
      if (action.insertLine !== undefined) parts.push(`<insert_line>${action.insertLine}</insert_line>`);
      if (action.oldStr !== undefined) parts.push(`<old_str>${action.oldStr}</old_str>`);
      if (action.newStr !== undefined) parts.push(`<new_str>${action.newStr}</new_str>`);
      parts.push('</str_replace_editor>');
      return parts.join('\n');
    }
  }
}

export function renderObservation(output: string): string {
  const body =
    output.length > OBSERVATION_LIMIT
      ? `${output.slice(0, OBSERVATION_LIMIT)}\n[... observation truncated: ${output.length - OBSERVATION_LIMIT} more characters ...]`
      : output;
  return `<observation>\n${body.replace(/\n+$/, '')}\n</observation>`;
}

/** The text a model writes for one step: thinking header, thought, action. */
export function renderStepHead(step: Pick<TranscriptStep, 'thought'>): string {
  return `\n## Thinking\n${step.thought.trim()}\n`;
}

export function renderStep(step: TranscriptStep): string {
  let text = `${renderStepHead(step) + renderAction(step.action)}\n`;
  if (step.observation !== undefined) text += `${renderObservation(step.observation)}\n`;
  return text;
}

export function renderTranscript(problemStatement: string, steps: TranscriptStep[]): string {
  return renderTask(problemStatement) + steps.map(renderStep).join('');
}
