/**
 * Opening a stage's run directory: the manifest a resumed run must match (its checkpoints'
 * content hashes, the probe set's hash), made here from the values the stage runs on, and
 * the directory opened new or, when asked, continued. The verbs never open one themselves.
 */
import { join } from 'node:path';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { checkpointRecords, probeSetRecord, RunDir } from '../store/run-dir.ts';

export interface RunDirRequest {
  verb: string;
  /** Everything that decides the results; a resumed run must match it. */
  config: Record<string, unknown>;
  /** The checkpoints known when the run starts (a watch adds its own as they land). */
  checkpoints: readonly Checkpoint[];
  /** The probe set as used (after selection and any limit) and where it came from. */
  probeSet: { source: string; items: readonly unknown[] };
  seeds: Record<string, number>;
}

/** The run directory `out`: a new one, or with `resume` the same run continued (an existing run is never overwritten). */
export function openRunDir(out: string, request: RunDirRequest, resume: boolean): RunDir {
  return RunDir.open(
    out,
    {
      verb: request.verb,
      config: request.config,
      checkpoints: checkpointRecords(request.checkpoints),
      probe_set: probeSetRecord(request.probeSet.source, request.probeSet.items),
      seeds: request.seeds,
    },
    { resume },
  );
}

/** The run directory of a verb run without --out: runs/<verb>-<UTC time>. */
export function timestampedRunDir(verb: string): string {
  return join('runs', `${verb}-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}`);
}
