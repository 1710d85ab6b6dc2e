/**
 * What a dataset row says about its run besides the trajectory: the task it ran on, whether
 * it resolved the task, and its own id. Each dataset names these differently:
 *
 * | dataset | task | resolved | id |
 * |---|---|---|---|
 * | nebius/SWE-agent-trajectories | `instance_id` | `target` | — |
 * | SWE-Gym OpenHands trajectories | `instance_id` | `resolved` | `run_id` (one per sampling run, not per row) |
 * | SWE-bench/SWE-smith-trajectories | `instance_id` | `resolved` | `traj_id` |
 * | R2E-Gym / DeepSWE runs | `ds.instance_id`, else the `docker_image` tag's last part | `reward` (1 = resolved) | — |
 *
 * R2EGym-SFT-Trajectories rows hold only `messages` (successful runs, no task id): they
 * cannot be matched to a task and are reported as such.
 */
import { InputError } from '../../errors.ts';
import type { Row } from '../../datasets/rows.ts';

export const FACT_COLUMNS = ['instance_id', 'target', 'resolved', 'reward', 'traj_id', 'ds', 'docker_image'] as const;

export interface RowFacts {
  instanceId: string | null;
  /** null when the row records no outcome. */
  resolved: boolean | null;
  trajId: string | null;
}

function optionalString(row: Row, key: string, source: string): string | null {
  const value = row[key];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !value)
    throw new InputError({ file: source, field: key }, `expected a non-empty string, got ${JSON.stringify(value)?.slice(0, 80)}`);
  return value;
}

function outcome(row: Row, source: string): boolean | null {
  for (const key of ['resolved', 'target'] as const) {
    const value = row[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'boolean')
      throw new InputError({ file: source, field: key }, `expected true or false, got ${JSON.stringify(value)}`);
    return value;
  }
  const reward = row.reward;
  if (reward === undefined || reward === null) return null;
  if (typeof reward !== 'number')
    throw new InputError({ file: source, field: 'reward' }, `expected a number, got ${JSON.stringify(reward)}`);
  return reward === 1;
}

function instanceId(row: Row, source: string): string | null {
  const own = optionalString(row, 'instance_id', source);
  if (own) return own;
  const ds = row.ds as { instance_id?: unknown } | null | undefined;
  if (typeof ds?.instance_id === 'string' && ds.instance_id) return ds.instance_id;
  // R2E-Gym's own `Trajectory.instance_name`: the image name after its last dot.
  const image = optionalString(row, 'docker_image', source);
  return image ? image.split('.').pop()! : null;
}

export function rowFacts(row: Row, source: string): RowFacts {
  return { instanceId: instanceId(row, source), resolved: outcome(row, source), trajId: optionalString(row, 'traj_id', source) };
}
