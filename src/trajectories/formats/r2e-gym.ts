/**
 * R2E-Gym / DeepSWE trajectories, whose actions are function-call text:
 * `<function=NAME>\n<parameter=KEY>VALUE</parameter>…\n</function>`. Accepted as
 * `{problem_statement, trajectory_steps: [{thought, action, observation}], output_patch}`
 * or as a chat message list whose assistant turns contain such calls.
 */
import { InputError } from '../../errors.ts';
import type { Trajectory, TrajectoryStep } from '../../schema/trajectory.ts';
import { FUNCTION_CALL, functionCallAction, r2eGym } from '../../formats/r2e-gym.ts';
import { checkMessageContents, contentText } from './mini-swe-agent.ts';

export function looksLikeR2eGym(data: unknown): boolean {
  const root = data as { trajectory_steps?: unknown; messages?: unknown };
  if (Array.isArray(root?.trajectory_steps)) return true;
  const messages = Array.isArray(data) ? data : root?.messages;
  return (
    Array.isArray(messages) &&
    messages.some((m) => typeof m === 'object' && m !== null && FUNCTION_CALL.test(contentText((m as { content?: unknown }).content)))
  );
}

export function importR2eGym(data: unknown, file: string): Trajectory {
  const root = data as {
    trajectory_steps?: Array<Record<string, unknown>>;
    problem_statement?: string;
    output_patch?: string;
    true_output_patch?: string;
    messages?: unknown;
  };
  const steps: TrajectoryStep[] = [];
  const preamble: Array<{ role: string; content: string }> = [];
  if (Array.isArray(root.trajectory_steps)) {
    root.trajectory_steps.forEach((s, index) => {
      if (typeof s.action !== 'string') throw new InputError({ file, field: `trajectory_steps.${index}.action` }, 'expected a string');
      const thought = typeof s.thought === 'string' ? s.thought : '';
      steps.push({
        index,
        thought: thought.trim(),
        response: thought ? `${thought}\n${s.action}` : s.action,
        action: functionCallAction(s.action),
        observation: typeof s.observation === 'string' ? s.observation : null,
      });
    });
  } else {
    const messages = (Array.isArray(data) ? data : root.messages) as Array<{ role: string; content: unknown }>;
    checkMessageContents(messages, file, Array.isArray(data) ? '' : 'messages');
    messages.forEach((m, i) => {
      const content = contentText(m.content);
      if (m.role !== 'assistant') {
        if (steps.length === 0) preamble.push({ role: m.role, content });
        return;
      }
      const call = FUNCTION_CALL.exec(content);
      const reply = messages.slice(i + 1).find((n) => n.role !== 'assistant');
      steps.push({
        index: steps.length,
        thought: (call ? content.slice(0, call.index) : content).trim(),
        response: content,
        action: functionCallAction(content),
        observation: reply ? contentText(reply.content) : null,
      });
    });
  }
  return {
    format: r2eGym.scaffold,
    source: file,
    problemStatement: root.problem_statement ?? preamble.find((m) => m.role === 'user')?.content ?? null,
    preamble,
    steps,
    submission: root.output_patch ?? root.true_output_patch ?? null,
  };
}
