/** The flags every environment's episode run shares — how checkpoints are served, where the run is kept — as the pipeline takes them. */
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { EpisodeRunServing } from '../pipeline/episode-run.ts';
import type { BosFlags } from './bos-option.ts';
import type { CheckpointFlags } from './checkpoint-options.ts';
import { resultCache, type RunFlags } from './run-options.ts';

export function episodeServing(
  flags: RunFlags & BosFlags & CheckpointFlags & { seed: number; json?: boolean },
  http: HttpBackendOptions,
): EpisodeRunServing {
  return {
    http,
    cache: resultCache(flags),
    dtype: flags.dtype,
    engine: flags.engine,
    bos: flags.bos,
    out: flags.out,
    resume: Boolean(flags.resume),
    quiet: Boolean(flags.json),
    seed: flags.seed,
  };
}
