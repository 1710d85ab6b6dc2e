/**
 * The context a probe scores: the trajectory up to T*, rendered either in its own
 * scaffold's text (`native`, as a base model would continue that log) or in the ASAP
 * `md+xml` transcript format.
 */
import type { Trajectory, TrajectoryAction, TrajectoryStep } from '../schema/trajectory.ts';
import { renderAction, renderStepHead, renderTranscript, type Action } from '../trajectories/mdxml.ts';
import { recordedOutput } from './drift.ts';

export const CONTEXT_FORMATS = ['native', 'asap'] as const;
export type ContextFormat = (typeof CONTEXT_FORMATS)[number];

export interface RenderedProbe {
  /** The item's `format` field: `native:<scaffold>` or `md+xml`. */
  format: string;
  context: string;
  gold: string;
}

/**
 * Native: the scaffold messages, then each earlier step's model turn and observation, then
 * the decisive turn up to its action; the gold is the action exactly as written there.
 * Messages are joined by blank lines (no chat template: a base model reads a log).
 */
function renderNative(trajectory: Trajectory, decisive: TrajectoryStep): RenderedProbe {
  const parts = trajectory.preamble.map((m) => m.content);
  for (const step of trajectory.steps.slice(0, decisive.index)) {
    parts.push(step.response);
    if (step.observation !== null) parts.push(step.observation);
  }
  const written = decisive.action.text.replace(/\n+$/, '');
  const at = decisive.response.lastIndexOf(written);
  const lead = at >= 0 ? decisive.response.slice(0, at) : decisive.thought ? `${decisive.thought}\n\n` : '';
  return { format: `native:${trajectory.format}`, context: `${parts.join('\n\n')}\n\n${lead}`, gold: written };
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

function renderAsap(trajectory: Trajectory, decisive: TrajectoryStep): RenderedProbe {
  const earlier = trajectory.steps
    .slice(0, decisive.index)
    .filter((s) => s.action.tool !== 'none')
    .map((s) => ({
      thought: s.thought || '(no thought recorded)',
      action: toMdXml(s.action),
      observation: s.observation === null ? '' : recordedOutput(s.observation, trajectory.format),
    }));
  return {
    format: 'md+xml',
    context:
      renderTranscript(trajectory.problemStatement ?? '', earlier) +
      renderStepHead({ thought: decisive.thought || '(no thought recorded)' }),
    gold: renderAction(toMdXml(decisive.action)),
  };
}

export function renderProbeContext(trajectory: Trajectory, decisiveIndex: number, format: ContextFormat): RenderedProbe {
  const decisive = trajectory.steps[decisiveIndex]!;
  return format === 'native' ? renderNative(trajectory, decisive) : renderAsap(trajectory, decisive);
}
