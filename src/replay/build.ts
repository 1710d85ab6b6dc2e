/** Probe building: replay each trajectory against its task and turn T* into a probe item. */
import { basename, relative } from 'node:path';
import type { LoadedTask } from '../schema/task.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { Trajectory } from '../schema/trajectory.ts';
import { renderProbeContext, type ContextFormat } from './render-context.ts';
import type { ReplayResult } from './replay.ts';

/** The task a trajectory file belongs to: the longest instance id its file name starts with, then a dot. */
export function taskForTrajectory(file: string, tasks: LoadedTask[]): LoadedTask | undefined {
  const name = basename(file);
  return tasks.filter((t) => name.startsWith(`${t.instance_id}.`)).sort((a, b) => b.instance_id.length - a.instance_id.length)[0];
}

/** What tells a task's trajectories apart: the file name after `<instance_id>.`, without the extension. */
function trajectoryLabel(file: string, task: LoadedTask): string {
  return basename(file).slice(task.instance_id.length + 1).replace(/\.(traj\.json|traj|json|md)$/, '') || 'traj';
}

/**
 * How a probe restores the environment before T*: `patch` (base commit + cumulative patch,
 * the default) or `replay` (re-run the earlier actions, when state outside the tree matters).
 */
export type RestoreMode = 'patch' | 'replay';

export function probeItemFrom(trajectory: Trajectory, task: LoadedTask, replay: ReplayResult, format: ContextFormat, root: string, restore: RestoreMode = 'patch'): ProbeItem | undefined {
  if (!replay.decisiveStep) return undefined;
  const index = replay.decisiveStep.index;
  const rendered = renderProbeContext(trajectory, index, format);
  const step = replay.steps.find((s) => s.index === index)!;
  return {
    id: `${task.instance_id}@${trajectoryLabel(trajectory.source, task)}${format === 'asap' ? ':asap' : ''}`,
    task: task.instance_id,
    format: rendered.format,
    context: rendered.context,
    gold: rendered.gold,
    distractors: [],
    decisive_step: index,
    state: restore === 'patch'
      ? { kind: 'patch', base_commit: task.base_commit, patch: step.patchBefore }
      : { kind: 'replay', base_commit: task.base_commit, actions: index },
    source: { file: relative(root, trajectory.source), format: trajectory.format },
    replay: { sandbox: replay.sandbox, mean_drift: replay.meanDrift, verifier_states: replay.verifierRuns.states },
  };
}
