/**
 * Before any episode: each instance's reference trajectory found and imported, and its
 * prefix built (or read back from the run directory, so a resumed run and every
 * checkpoint see the byte-identical prefix). Any bad input stops here, before model work.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../errors.ts';
import { taskForTrajectory } from '../verify/load-task.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { SandboxLease } from '../sandbox/pool.ts';
import { importTrajectory } from '../trajectories/import.ts';
import { buildPrefix, PrefixLeakError, type PrefixOptions } from './prefix.ts';
import type { AsapInstance } from './run.ts';
import type { AsapStore } from './store.ts';

/** The reference trajectory of each task: the file in `dir` named `<instance_id>.<anything>` (the first, sorted). */
export function referenceFiles(dir: string, tasks: readonly LoadedTask[]): Map<string, string> {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new InputError({ file: dir }, 'not a directory of reference trajectories');
  const files = readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .sort()
    .map((f) => join(dir, f));
  const byTask = new Map<string, string>();
  for (const file of files) {
    const task = taskForTrajectory(file, [...tasks]);
    if (task && !byTask.has(task.instance_id)) byTask.set(task.instance_id, file);
  }
  for (const task of tasks) {
    if (!byTask.has(task.instance_id))
      throw new InputError(
        { file: dir, field: task.instance_id },
        `no reference trajectory for instance ${task.instance_id} (expected a file named ${task.instance_id}.<anything>)`,
      );
  }
  return byTask;
}

export interface Prepared {
  instances: AsapInstance[];
  /** Instances whose reference prefix leaks the answer: not run, and reported. */
  excluded: Array<{ instance: string; reason: string }>;
}

/**
 * Builds every instance's prefix. An instance whose prefix leaks is excluded (one bad
 * reference must not sink a run over hundreds of instances); when every instance is
 * excluded, that is bad input (the first leak is thrown).
 */
export async function prepareInstances(
  tasks: readonly LoadedTask[],
  referenceDir: string,
  options: PrefixOptions,
  store: AsapStore,
  leaseFor: (task: LoadedTask) => SandboxLease,
): Promise<Prepared> {
  const references = referenceFiles(referenceDir, tasks);
  const prepared: Prepared = { instances: [], excluded: [] };
  const leaks: PrefixLeakError[] = [];
  for (const task of tasks) {
    let prefix = store.readPrefix(task.instance_id);
    if (!prefix) {
      const trajectory = importTrajectory(references.get(task.instance_id)!);
      try {
        prefix = await leaseFor(task)((sb) => buildPrefix(trajectory, task, options, sb));
      } catch (error) {
        if (!(error instanceof PrefixLeakError)) throw error;
        leaks.push(error);
        prepared.excluded.push({ instance: task.instance_id, reason: error.message });
        continue;
      }
      store.writePrefix(prefix);
    }
    prepared.instances.push({ task, prefix });
  }
  if (prepared.instances.length === 0 && leaks.length > 0) throw leaks[0]!;
  return prepared;
}
