/**
 * The checkpoints a run scores, from the `--ckpt` specs (or the embedded ladder): each
 * resolved once, before any work, and refused together where two would share a run
 * directory's files.
 */
import { relative } from 'node:path';
import { type Checkpoint, resolveCheckpoint } from '../backends/checkpoint.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import { embeddedCheckpointDirs } from '../embedded.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import { InputError } from '../errors.ts';
import { checkpointKey as episodesDirName } from '../swe/store.ts';

/** How each checkpoint directory runs (`--dtype`, `--engine`). */
export interface CheckpointHow {
  dtype?: Dtype | undefined;
  engine?: EngineChoice | undefined;
}

/** The checkpoints named by `--ckpt`, or the embedded ladder; each checked before any work. */
/** `scores`: the verb scores prompts, which a checkpoint served by llama.cpp cannot (refused here, before any work). */
export function resolveCheckpoints(
  ckpt: string[] | undefined,
  http: HttpBackendOptions = {},
  how: CheckpointHow = {},
  scores = false,
): Checkpoint[] {
  const specs = ckpt ?? embeddedCheckpointDirs().map((dir) => relative(process.cwd(), dir) || '.');
  const checkpoints = specs.map((spec) => resolveCheckpoint(spec, { http, dtype: how.dtype, engine: how.engine, scores }));
  refuseSharedFileNames(checkpoints);
  return checkpoints;
}

/**
 * Two different checkpoints whose names flatten to one file name (`a/b` and `a_b`) would
 * write one episodes directory: refused, rather than one's transcripts read as the other's.
 * (The flattening is kept as it is so existing run directories resume.)
 */
function refuseSharedFileNames(checkpoints: readonly Checkpoint[]): void {
  const byName = new Map<string, Checkpoint>();
  for (const c of checkpoints) {
    const name = episodesDirName(c.name);
    const other = byName.get(name);
    if (other && other.key !== c.key)
      throw new InputError(
        { file: c.name, field: '--ckpt' },
        `this checkpoint and ${other.name} would share the run directory's files (episodes/${name}); give one of them another path`,
      );
    byName.set(name, c);
  }
}
