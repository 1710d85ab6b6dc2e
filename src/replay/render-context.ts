/**
 * The context a probe scores: the trajectory up to T*, rendered either in its own
 * scaffold's text (`native`, as a base model would continue that log) or in the ASAP
 * `md+xml` transcript format.
 */
import { mdXml, toMdXml } from '../formats/md-xml-format.ts';
import { renderAction, renderStepHead, renderTranscript } from '../formats/md-xml.ts';
import { type ItemFormatName, nativeFormat } from '../formats/registry.ts';
import type { Trajectory, TrajectoryStep } from '../schema/trajectory.ts';

export const CONTEXT_FORMATS = ['native', 'asap'] as const;
export type ContextFormat = (typeof CONTEXT_FORMATS)[number];

export interface RenderedProbe {
  /** The item's `format` field: `native:<scaffold>` or `md+xml`. */
  format: ItemFormatName;
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
  return { format: nativeFormat(trajectory.format).name, context: `${parts.join('\n\n')}\n\n${lead}`, gold: written };
}

function renderAsap(trajectory: Trajectory, decisive: TrajectoryStep): RenderedProbe {
  const earlier = trajectory.steps
    .slice(0, decisive.index)
    .filter((s) => s.action.tool !== 'none')
    .map((s) => ({
      thought: s.thought || '(no thought recorded)',
      action: toMdXml(s.action),
      observation: s.observation === null ? '' : nativeFormat(trajectory.format).recordedOutput(s.observation),
    }));
  return {
    format: mdXml.name,
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
