/**
 * Building a probe set as `probe build` and `probe demo` do it: replay every trajectory
 * against its task, cut a probe item at T* per context format, search distractors.
 * A bad trajectory is a rejection, not a stop: the others are still built.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CompletionBackend } from '../backends/types.ts';
import { describeCause, InputError } from '../errors.ts';
import { probeItemFrom, taskForTrajectory, withDistractors, type RestoreMode } from '../replay/build.ts';
import type { VerdictCache } from '../replay/distractors.ts';
import type { ContextFormat } from '../replay/render-context.ts';
import { replayTrajectory, type ReplayOptions } from '../replay/replay.ts';
import { createProgress } from '../report/progress.ts';
import { SandboxPool } from '../sandbox/pool.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { LoadedTask } from '../schema/task.ts';
import { importTrajectory } from '../trajectories/import.ts';

export interface BuildSettings {
  trajectories: string;
  tasks: LoadedTask[];
  contexts: ContextFormat[];
  restore: RestoreMode;
  distractors: boolean;
  /** Actions sampled from a checkpoint at T*, offered as distractor candidates too. */
  sampler?: { name: string; backend: CompletionBackend; n: number; seed: number } | undefined;
  replay: ReplayOptions;
  quiet: boolean;
}

export interface BuildOutcome {
  items: ProbeItem[];
  trajectories: Array<{ trajectory: string; task: string | null; decisiveStep: number | null; rejected: string | null }>;
  /** Trajectories rejected as bad input (a malformed file, no task). */
  inputErrors: number;
}

export function trajectoryFiles(dir: string): string[] {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new InputError({ file: dir }, 'not a directory of trajectories');
  return readdirSync(dir).filter((f) => !f.startsWith('.')).sort().map((f) => join(dir, f)).filter((f) => statSync(f).isFile());
}

export async function buildProbeSet(s: BuildSettings): Promise<BuildOutcome> {
  const files = trajectoryFiles(s.trajectories);
  const root = resolve(s.trajectories, '..');
  const outcome: BuildOutcome = { items: [], trajectories: [], inputErrors: 0 };
  const progress = createProgress({ total: files.length, enabled: !s.quiet });
  try {
    for (const file of files) {
      progress.label(`replaying ${file}`);
      const task = taskForTrajectory(file, s.tasks);
      try {
        if (!task) throw new InputError({ file }, 'no task whose instance_id starts its file name');
        const trajectory = importTrajectory(file);
        const pool = new SandboxPool(s.replay.openSandbox, task, s.replay.concurrency ?? 4);
        try {
          const replay = await replayTrajectory(trajectory, task, { ...s.replay, pool });
          const cache: VerdictCache = new Map();
          const repoFiles = replay.decisiveStep ? (await pool.lease((sb) => sb.exec('git ls-files'))).output.split('\n').filter(Boolean) : [];
          for (const format of s.contexts) {
            const item = probeItemFrom(trajectory, task, replay, format, root, s.restore);
            if (item) outcome.items.push(s.distractors ? await withDistractors(item, trajectory, task, replay, format, pool.lease, cache, repoFiles, s.sampler) : item);
          }
          outcome.trajectories.push({ trajectory: file, task: task.instance_id, decisiveStep: replay.decisiveStep?.index ?? null, rejected: replay.rejected });
        } finally {
          await pool.close();
        }
      } catch (error) {
        if (!(error instanceof InputError)) throw error;
        // A bad file is recorded as a rejection; the other trajectories are still built.
        outcome.inputErrors++;
        outcome.trajectories.push({ trajectory: file, task: task?.instance_id ?? null, decisiveStep: null, rejected: describeCause(error) });
      }
      progress.tick();
    }
  } finally {
    progress.stop();
  }
  return outcome;
}
