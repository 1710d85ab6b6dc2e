/**
 * A study that starts from trajectories builds its probe set into its run directory once
 * (as `probe demo` does): `probes.jsonl` there is the set every rung reads, and a resumed
 * study keeps the one it built. The build itself resumes from its progress log.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../errors.ts';
import type { ContextFormat } from '../replay/render-context.ts';
import { openSandbox } from '../sandbox/open.ts';
import type { LoadedTask } from '../schema/task.ts';
import { existingRunError, RunDir } from '../store/run-dir.ts';
import { TrajectoryBuildSchema } from '../schema/build-progress.ts';
import { UnitLog } from '../store/unit-log.ts';
import { ensureOutputDir } from '../store/output-path.ts';
import { lockRunDir } from '../store/run-lock.ts';
import {
  buildProbeSet,
  countOutcomes,
  describeCounts,
  trajectoriesHash,
  writeProbeItems,
  type TrajectoryBuild,
} from '../pipeline/build.ts';

export interface StudyBuild {
  trajectories: string;
  tasks: LoadedTask[];
  tasksPath: string;
  contexts: ContextFormat[];
  resume: boolean;
  quiet: boolean;
}

/** The probe set of the run directory `out` (made, and locked for this process): built from the trajectories unless it is there already. */
export async function studyProbeSet(out: string, b: StudyBuild): Promise<string> {
  ensureOutputDir(out, '--out');
  lockRunDir(out); // from the build on: one study writes this directory at a time
  const file = join(out, 'probes.jsonl');
  if (existsSync(file)) return file;
  if (existsSync(RunDir.manifestFile(out)) && !b.resume) throw existingRunError(RunDir.manifestFile(out));
  if (!b.quiet) process.stderr.write(`Building probes from ${b.trajectories} (replaying each trajectory in a jailed sandbox)\n`);
  const progress = UnitLog.open<TrajectoryBuild>(
    join(out, 'build.progress.jsonl'),
    { trajectories: trajectoriesHash(b.trajectories), tasks: b.tasksPath, context: b.contexts },
    { resume: b.resume, what: 'probe build', units: TrajectoryBuildSchema },
  );
  const built = await buildProbeSet({
    trajectories: b.trajectories,
    tasks: b.tasks,
    contexts: b.contexts,
    restore: 'patch',
    distractors: true,
    // One verification of the final state: the study's tasks are its own, checked when made; a flaky one is still reported.
    replay: { openSandbox: (t) => openSandbox('local', t), sandboxName: 'local', concurrency: 4, repeats: 1 },
    quiet: b.quiet,
    memo: progress,
  });
  if (built.inputErrors) throw new InputError({ file: b.trajectories }, `${built.inputErrors} trajectories could not be read (see above)`);
  if (built.items.length === 0)
    throw new InputError({ file: b.trajectories }, `no probe items: ${describeCounts(countOutcomes(built.trajectories))}`);
  writeProbeItems(file, built.items);
  progress.remove();
  if (!b.quiet)
    process.stderr.write(`${built.items.length} probe items (${describeCounts(countOutcomes(built.trajectories))}) → ${file}\n`);
  return file;
}
