/**
 * Running a stage over checkpoints: one backend open at a time under one progress display,
 * each probe's finished items read back from the run directory, and a broken checkpoint
 * reported without discarding the others' results.
 */
import { createHash } from 'node:crypto';
import { join, resolve } from 'node:path';
import { type BosPolicy, bosConfig } from '../backends/bos.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import { EndpointFailure } from '../backends/http/transport.ts';
import { openBackend } from '../backends/open.ts';
import { DEFAULT_DTYPE, type Dtype } from '../backends/onnx/dtype.ts';
import { DEFAULT_ENGINE, type EngineChoice } from '../engines/engine-target.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { ProbeError } from '../errors.ts';
import type { ItemHooks } from '../probes/memo.ts';
import { createProgress } from '../report/progress.ts';
import { enterStage } from '../report/run-stages.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { SampleProbe } from '../schema/sample-results.ts';
import type { RunDir } from '../store/run-dir.ts';
import { interruptedBy } from '../util/interrupt.ts';

export type Failure = ProbeError | EndpointFailure;

/** A scoring run with its input checked: items, checkpoints, and where results go. */
export interface ScoringRun {
  items: ProbeItem[];
  checkpoints: Checkpoint[];
  http: HttpBackendOptions;
  /** Which graph of each checkpoint directory runs (`--dtype`). */
  dtype: Dtype | undefined;
  /** What runs a Hugging Face directory (`--engine`), for checkpoints resolved as the run goes (`probe watch`). */
  engine?: EngineChoice | undefined;
  cache: ResultCache | undefined;
  /** The run directory (`--out`), when there is one. */
  dir: RunDir | undefined;
  quiet: boolean;
  /** Whether a BOS token goes before contexts and prompts (`--bos`). */
  bos?: BosPolicy;
}

/** For checkpoints behind servers, what picks the model and its tokenizer: a resumed run must ask for the same. */
export function servedAs(http: HttpBackendOptions): Record<string, unknown> {
  return {
    ...(http.kind ? { server_kind: http.kind } : {}),
    ...(http.model ? { server_model: http.model } : {}),
    ...(http.tokenizerDir ? { tokenizer: resolve(http.tokenizerDir) } : {}),
  };
}

/**
 * How an episode run's checkpoints are served — servers' model and tokenizer, the BOS policy,
 * a graph other than fp32, an engine other than auto — as settings a resumed run must match. Left out where default, so
 * runs of the defaults keep the settings hash (and default run directory) they had.
 */
export function servingConfig(s: {
  http?: HttpBackendOptions | undefined;
  bos?: BosPolicy | undefined;
  dtype?: Dtype | undefined;
  engine?: EngineChoice | undefined;
}): Record<string, unknown> {
  return {
    ...servedAs(s.http ?? {}),
    ...bosConfig(s.bos),
    ...(s.dtype && s.dtype !== DEFAULT_DTYPE ? { dtype: s.dtype } : {}),
    ...(s.engine && s.engine !== DEFAULT_ENGINE ? { engine: s.engine } : {}),
  };
}

/**
 * What run.json records (and a resumed run must match): the dtype every directory
 * checkpoint ran at, and an engine other than auto (left out at auto, so runs of the
 * defaults keep the settings they had).
 */
export function checkpointConfig(how: { dtype?: Dtype | undefined; engine?: EngineChoice | undefined }): {
  dtype: Dtype;
  engine?: EngineChoice;
} {
  return { dtype: how.dtype ?? DEFAULT_DTYPE, ...(how.engine && how.engine !== DEFAULT_ENGINE ? { engine: how.engine } : {}) };
}

/** The default run directory of an episode run: `runs/<kind>-<hash of its settings>` (a rerun with them resumes there). */
export function settingsRunDir(kind: string, config: Record<string, unknown>): string {
  return join('runs', `${kind}-${createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 12)}`);
}

/**
 * Progress and the run directory's memo for one probe × checkpoint (its finished items
 * checked against the probe's schema as they are read back: a SampleProbe's, or the one an
 * environment's run declared, RunDir.declareSamples).
 */
export function itemHooks<T>(
  dir: RunDir | undefined,
  probe: SampleProbe | (string & {}),
  checkpoint: string,
  tick: (reused: boolean) => void,
): ItemHooks<T> {
  const memo = dir?.memo<T>(probe, checkpoint);
  // Items run concurrently (a server takes several): which were read back is kept per item, not in one flag.
  const readBack = new Set<string>();
  return {
    // A finished item read back from the log is progress, but not work for the ETA.
    ...(memo
      ? {
          memo: {
            get: (id: string) => {
              const v = memo.get(id);
              if (v !== undefined) readBack.add(id);
              return v;
            },
            put: (id: string, v: T) => memo.put(id, v),
          },
        }
      : {}),
    onItem: (id: string) => tick(readBack.delete(id)),
  };
}

export interface CheckpointLoopOptions {
  /** Progress units per checkpoint. */
  units: number;
  quiet: boolean;
  http?: HttpBackendOptions;
  cache?: ResultCache | undefined;
  /** Which graph of each checkpoint directory runs (`--dtype`). */
  dtype?: Dtype | undefined;
  /** Shown beside the bar. */
  label?: string;
  /** `--bos`: resolved per checkpoint when it opens, and recorded in the run directory's run.json. */
  bos?: BosPolicy | undefined;
  dir?: RunDir | undefined;
}

/** The loop options of a stage of `run`: its serving, cache and run directory, `units` per checkpoint shown as `label`. */
export function runLoopOptions(
  run: Pick<ScoringRun, 'quiet' | 'http' | 'cache' | 'dtype' | 'bos' | 'dir'>,
  label: string,
  units: number,
): CheckpointLoopOptions {
  return { units, quiet: run.quiet, http: run.http, cache: run.cache, dtype: run.dtype, label, bos: run.bos, dir: run.dir };
}

/** Runs `run` with each checkpoint's backend in turn, one open at a time, under one progress display. */
export async function forEachCheckpoint<R>(
  checkpoints: readonly Checkpoint[],
  options: CheckpointLoopOptions,
  /** `name` is what results carry (`checkpoint`): the argument as written. */
  run: (name: string, backend: CompletionBackend, tick: (reused?: boolean) => void) => Promise<R>,
): Promise<{ results: R[]; failures: Failure[] }> {
  if (options.label) enterStage(options.label);
  const progress = createProgress({
    total: checkpoints.length * options.units,
    perCheckpoint: checkpoints.map(({ name }) => ({ name, units: options.units })),
    enabled: !options.quiet,
  });
  const results: R[] = [];
  const failures: Failure[] = [];
  try {
    for (const ckpt of checkpoints) {
      progress.label(`${options.label ? `${options.label}: ` : ''}${ckpt.name}`);
      try {
        const backend = await openBackend(ckpt, {
          http: options.http ?? {},
          ...(options.cache ? { cache: options.cache } : {}),
          ...(options.bos ? { bos: options.bos } : {}),
          ...(options.dtype ? { dtype: options.dtype } : {}),
          ...(options.dir ? { engineLogDir: join(options.dir.dir, 'engines') } : {}),
        });
        try {
          if (options.dir) options.dir.recordServing(ckpt.name, { bos: await backend.bos?.(), engine: backend.engine });
          results.push(await run(ckpt.name, backend, (reused = false) => progress.tick(ckpt.name, reused)));
        } finally {
          await backend.close();
        }
      } catch (error) {
        // One broken checkpoint (bad files, an unreachable server, a runtime that fails on its graph) must not
        // discard the others' results: report it and go on. A shutdown, or a bug, stops the run.
        if (interruptedBy() || !(error instanceof ProbeError || error instanceof EndpointFailure)) throw error;
        failures.push(error);
      }
    }
  } finally {
    progress.stop();
  }
  return { results, failures };
}

/** One probe over every checkpoint of a prepared run. */
export function scoreCheckpoints<R, T>(
  run: ScoringRun,
  probe: SampleProbe,
  score: (checkpoint: string, backend: CompletionBackend, hooks: ItemHooks<T>) => Promise<R>,
): Promise<{ results: R[]; failures: Failure[] }> {
  return forEachCheckpoint(run.checkpoints, runLoopOptions(run, probe, run.items.length), (ckpt, backend, tick) =>
    score(ckpt, backend, itemHooks<T>(run.dir, probe, ckpt, tick)),
  );
}
