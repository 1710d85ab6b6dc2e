/** Brings a sandbox to a probe item's state before T*. */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { runAction, writeToolState } from '../sandbox/run-action.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { Sandbox } from '../sandbox/types.ts';
import { importTrajectory } from '../trajectories/import.ts';

/** The task as the item's sandbox must hold it: the repository where the trajectory ran, when the item records that. */
export function taskForItem(task: LoadedTask, item: ProbeItem): LoadedTask {
  return item.workdir === undefined || item.workdir === task.workdir ? task : { ...task, workdir: item.workdir };
}

export async function restoreProbeState(sb: Sandbox, item: ProbeItem, _task: LoadedTask): Promise<void> {
  const state = item.state;
  if (state.kind === 'patch') {
    await sb.restore({ base_commit: state.base_commit, patch: state.patch });
    await writeToolState(sb, state.tool_state);
    return;
  }
  // Replay of the actions before T*, for state that a patch does not carry.
  const file = [resolve(item.source.file), resolve(REPO_ROOT, item.source.file)].find((f) => existsSync(f));
  if (!file)
    throw new InputError(
      { file: item.source.file, field: 'source.file' },
      `trajectory of probe ${item.id} not found (needed to restore its state by replay)`,
    );
  await sb.restore({ base_commit: state.base_commit, patch: '' });
  for (const step of importTrajectory(file).steps.slice(0, state.actions)) await runAction(sb, step.action);
}
