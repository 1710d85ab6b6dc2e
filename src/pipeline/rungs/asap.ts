/**
 * The ASAP rung: whole episodes of the probes' tasks (the first `asapInstances`), from the
 * reference trajectories' prefixes, under the protocol's settings (pipeline/asap.ts).
 */
import type { Checkpoint } from '../../backends/checkpoint.ts';
import type { ProbeItem } from '../../schema/probe-item.ts';
import type { LoadedTask } from '../../schema/task.ts';
import { referenceFiles } from '../../swe/prepare.ts';
import { type AsapRunOutcome, asapProtocolSettings, runAsapOverCheckpoints } from '../asap.ts';
import type { ScoringRun } from '../checkpoint-loop.ts';
import { type AsapSettings, asapMaxTokensOf, asapProfileOf, type TaskSettings } from './settings.ts';

/** The instances that get ASAP episodes: the probes' tasks (the first N with `asapInstances`). */
export function asapTasksOf(
  items: readonly ProbeItem[],
  s: Pick<TaskSettings, 'tasks'> & Pick<AsapSettings, 'asapInstances'>,
): LoadedTask[] {
  const probeTasks = new Set(items.map((i) => i.task));
  const tasks = s.tasks.filter((t) => probeTasks.has(t.instance_id));
  return s.asapInstances === undefined ? tasks : tasks.slice(0, s.asapInstances);
}

/** Checks, before any rung's work, that every instance has a reference trajectory: a missing one must not cost hours. */
export function checkReferences(s: Pick<AsapSettings, 'reference' | 'asapRuns'>, tasks: readonly LoadedTask[]): void {
  if (s.asapRuns > 0) referenceFiles(s.reference, tasks);
}

/** How the run's checkpoints are served, as the ASAP run records it. */
export type AsapServing = Pick<ScoringRun, 'quiet' | 'http' | 'cache' | 'dtype' | 'engine' | 'bos'>;

/** ASAP episodes of `checkpoints` on `tasks`, written to `out` (undefined: the settings' own directory under runs/). */
export function runAsapRung(
  checkpoints: readonly Checkpoint[],
  tasks: LoadedTask[],
  s: TaskSettings & AsapSettings,
  serving: AsapServing,
  out: string | undefined,
): Promise<AsapRunOutcome> {
  return runAsapOverCheckpoints(
    checkpoints,
    tasks,
    asapProtocolSettings({
      tasksPath: s.tasksPath,
      reference: s.reference,
      runs: s.asapRuns,
      concurrency: s.concurrency,
      profile: asapProfileOf(s),
      maxSteps: s.asapMaxSteps,
      maxTokens: asapMaxTokensOf(s),
      seed: s.seed,
      out,
      quiet: serving.quiet,
      http: serving.http,
      cache: serving.cache,
      dtype: serving.dtype,
      engine: serving.engine,
      bos: serving.bos,
    }),
  );
}
