/**
 * A scoring run made ready: every input checked before any work (so a typo never costs a
 * finished result) — the probe items, the checkpoints — and the run directory opened, new
 * or, with `resume`, the same run continued.
 */
import { type BosPolicy, bosConfig } from '../backends/bos.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import { loadProbeItems } from '../probes/load.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { checkpointConfig, servedAs, type ScoringRun } from './checkpoint-loop.ts';
import { resolveCheckpoints } from './checkpoints.ts';
import { openRunDir } from './open-run.ts';

export interface ScoringRunRequest {
  verb: string;
  /** The run directory; none: results only printed. */
  out?: string | undefined;
  resume: boolean;
  /** The probe items' file or directory. */
  probes: string;
  select?: ((items: ProbeItem[]) => ProbeItem[]) | undefined;
  /** Only the first N items. */
  limit?: number | undefined;
  /** The `--ckpt` specs; none: the embedded ladder. */
  ckpt?: string[] | undefined;
  /** The verb scores prompts (BPB, MCQ): checkpoints whose engine cannot are refused up front. */
  scores?: boolean | undefined;
  http: HttpBackendOptions;
  dtype: Dtype | undefined;
  engine: EngineChoice | undefined;
  bos: BosPolicy | undefined;
  cache: ResultCache | undefined;
  quiet: boolean;
  /** The verb's own settings a resumed run must match (how checkpoints are served is added here). */
  config: Record<string, unknown>;
  seeds?: Record<string, number> | undefined;
}

export function openScoringRun(request: ScoringRunRequest): ScoringRun {
  const { http, dtype, engine, bos } = request;
  let items = loadProbeItems(request.probes);
  if (request.select) items = request.select(items);
  if (request.limit !== undefined) items = items.slice(0, request.limit);
  const checkpoints = resolveCheckpoints(request.ckpt, http, { dtype, engine }, request.scores);
  const dir = request.out
    ? openRunDir(
        request.out,
        {
          verb: request.verb,
          config: { ...request.config, ...servedAs(http), ...bosConfig(bos), ...checkpointConfig({ dtype, engine }) },
          checkpoints,
          probeSet: { source: request.probes, items },
          seeds: request.seeds ?? {},
        },
        request.resume,
      )
    : undefined;
  if (dir?.status === 'resumed' && !request.quiet) process.stderr.write(`Resuming the run in ${dir.dir}\n`);
  return {
    items,
    checkpoints,
    http,
    dtype,
    engine,
    cache: request.cache,
    dir,
    quiet: request.quiet,
    ...(bos ? { bos } : {}),
  };
}
