/**
 * SWE-agent `.traj` files: `{environment, trajectory: [{action, observation, response,
 * thought, state}], history, info}`, both the older format (windowed editor commands as
 * text) and the newer one (tool calls rendered as command lines in `action`).
 */
import { InputError } from '../../errors.ts';
import type { Trajectory, TrajectoryStep } from '../../schema/trajectory.ts';
import { sweAgent, sweAgentAction } from '../../formats/swe-agent.ts';
import { checkMessageContents, contentText } from './mini-swe-agent.ts';

interface SweAgentStep {
  action?: unknown;
  observation?: unknown;
  response?: unknown;
  thought?: unknown;
  state?: unknown;
}

/** `working_dir` of a step's `state`: an object (newer files) or its JSON text (older ones). */
function stateWorkdir(state: unknown): string | undefined {
  let value = state;
  if (typeof state === 'string') {
    try {
      value = JSON.parse(state);
    } catch {
      return undefined;
    }
  }
  const dir = (value as { working_dir?: unknown } | null)?.working_dir;
  return typeof dir === 'string' && dir.startsWith('/') ? dir : undefined;
}

export function looksLikeSweAgent(data: unknown): boolean {
  const steps = (data as { trajectory?: unknown })?.trajectory;
  return Array.isArray(steps) && steps.every((s) => typeof s === 'object' && s !== null && 'action' in s);
}

export function importSweAgent(data: unknown, file: string): Trajectory {
  const root = data as { trajectory?: SweAgentStep[]; history?: Array<{ role: string; content: unknown }>; info?: { submission?: string } };
  if (!Array.isArray(root.trajectory)) throw new InputError({ file, field: 'trajectory' }, 'expected a list of steps');
  const history = root.history ?? [];
  if (!Array.isArray(history)) throw new InputError({ file, field: 'history' }, 'expected a list of chat messages');
  checkMessageContents(history, file, 'history');
  const firstAssistant = history.findIndex((m) => m.role === 'assistant');
  const preamble = history
    .slice(0, firstAssistant < 0 ? history.length : firstAssistant)
    .map((m) => ({ role: m.role, content: contentText(m.content) }));
  // The task is the last user message before the first action: earlier ones may be demonstrations.
  const task =
    preamble
      .filter((m) => m.role === 'user')
      .map((m) => m.content)
      .reverse()
      .find((c) => c.includes('ISSUE:')) ?? null;
  const steps: TrajectoryStep[] = root.trajectory.map((step, index) => {
    if (typeof step.action !== 'string') throw new InputError({ file, field: `trajectory.${index}.action` }, 'expected a string');
    return {
      index,
      thought: typeof step.thought === 'string' ? step.thought.trim() : '',
      response: typeof step.response === 'string' ? step.response : '',
      action: sweAgentAction(step.action),
      observation: typeof step.observation === 'string' ? step.observation : null,
    };
  });
  const issue = task ? (/ISSUE:\n([\s\S]*?)\n\s*\nINSTRUCTIONS:/.exec(task)?.[1] ?? task) : null;
  const recordedWorkdir = root.trajectory.map((s) => stateWorkdir(s.state)).find((d) => d !== undefined);
  return {
    format: sweAgent.scaffold,
    source: file,
    problemStatement: issue,
    preamble,
    steps,
    submission: root.info?.submission ?? null,
    ...(recordedWorkdir ? { recordedWorkdir } : {}),
  };
}
