/**
 * What every scoring verb shares: the checkpoints and probe items to use (checked before
 * any work), the run directory and cache, one backend open at a time, progress, and broken
 * checkpoints reported without discarding the others' results.
 */
import { join, relative, resolve } from 'node:path';
import { Command } from 'commander';
import type { BosPolicy } from '../backends/bos.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import { EndpointFailure } from '../backends/http/transport.ts';
import { checkCheckpoint, openBackend } from '../backends/open.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { embeddedCheckpointDirs, EMBEDDED_PROBES } from '../embedded.ts';
import { InputError, ProbeError } from '../errors.ts';
import { interruptedBy } from '../util/interrupt.ts';
import { loadProbeItems } from '../probes/load.ts';
import type { ItemHooks } from '../probes/memo.ts';
import { createProgress } from '../report/progress.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { checkpointRecords, probeSetRecord, RunDir } from '../store/run-dir.ts';
import { positiveInteger } from './args.ts';
import { addBosOption, bosConfig, type BosFlags } from './bos-option.ts';
import { addDtypeOption, dtypeConfig, type DtypeFlags } from './dtype-option.ts';
import { addHttpOptions, httpOptions, type HttpFlags } from './http-options.ts';
import { addRunOptions, checkResume, resultCache, type RunFlags } from './run-options.ts';

export interface ScoringFlags extends HttpFlags, RunFlags, BosFlags, DtypeFlags { ckpt?: string[]; probes?: string; json?: boolean; limit?: number }

export function addScoringOptions(command: Command): Command {
  return addRunOptions(addBosOption(addHttpOptions(addDtypeOption(command
    .option('--ckpt <dir|url...>', 'checkpoint directories (transformers.js layout) or server URLs (http://host:8000/v1; replicas comma-separated); default: the embedded ladder')))
    .option('--probes <file|dir>', 'probe items (.jsonl file or a directory of them); default: the shipped demo probes')
    .option('--limit <n>', 'use only the first N probe items', positiveInteger)
    .option('--json', 'print one JSON document on stdout')));
}

export type Failure = ProbeError | EndpointFailure;

/** A scoring run with its input checked: items, checkpoints, and where results go. */
export interface ScoringRun {
  items: ProbeItem[];
  checkpoints: string[];
  http: HttpBackendOptions;
  /** Which graph of each checkpoint directory runs (`--dtype`). */
  dtype: Dtype | undefined;
  cache: ResultCache | undefined;
  /** The run directory (`--out`), when there is one. */
  dir: RunDir | undefined;
  quiet: boolean;
  /** Whether a BOS token goes before contexts and prompts (`--bos`). */
  bos?: BosPolicy;
}

/** The checkpoints named by `--ckpt`, or the embedded ladder; each checked before any work. */
export function resolveCheckpoints(ckpt: string[] | undefined, http: HttpBackendOptions = {}, dtype?: Dtype): string[] {
  const checkpoints = ckpt ?? embeddedCheckpointDirs().map((dir) => relative(process.cwd(), dir) || '.');
  for (const c of checkpoints) checkCheckpoint(c, http, dtype);
  return checkpoints;
}

/**
 * Checks every input before any work (so a typo never costs a finished result) and opens
 * the run directory: a new one, or with --resume the same run continued.
 */
export function prepareScoringRun(flags: ScoringFlags, verb: string, settings: { config: Record<string, unknown>; seeds?: Record<string, number>; select?: (items: ProbeItem[]) => ProbeItem[] }): ScoringRun {
  checkResume(flags);
  const source = flags.probes ?? EMBEDDED_PROBES;
  let items = loadProbeItems(source);
  if (settings.select) items = settings.select(items);
  if (flags.limit !== undefined) items = items.slice(0, flags.limit);
  const http = httpOptions(flags, flags.ckpt);
  const checkpoints = resolveCheckpoints(flags.ckpt, http, flags.dtype);
  const dir = flags.out
    ? RunDir.open(flags.out, { verb, config: { ...settings.config, ...servedAs(http), ...bosConfig(flags.bos), ...dtypeConfig(flags) }, checkpoints: checkpointRecords(checkpoints), probe_set: probeSetRecord(source, items), seeds: settings.seeds ?? {} }, { resume: Boolean(flags.resume) })
    : undefined;
  if (dir?.status === 'resumed' && !flags.json) process.stderr.write(`Resuming the run in ${dir.dir}\n`);
  return { items, checkpoints, http, dtype: flags.dtype, cache: resultCache(flags), dir, quiet: Boolean(flags.json), ...(flags.bos ? { bos: flags.bos } : {}) };
}

/** The run directory of a verb run without --out: runs/<verb>-<UTC time>. */
export function timestampedRunDir(verb: string): string {
  return join('runs', `${verb}-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}`);
}

/** For checkpoints behind servers, what picks the model and its tokenizer: a resumed run must ask for the same. */
export function servedAs(http: HttpBackendOptions): Record<string, unknown> {
  return {
    ...(http.kind ? { server_kind: http.kind } : {}),
    ...(http.model ? { server_model: http.model } : {}),
    ...(http.tokenizerDir ? { tokenizer: resolve(http.tokenizerDir) } : {}),
  };
}

/** Progress and the run directory's memo for one probe × checkpoint. */
export function itemHooks<T>(dir: RunDir | undefined, probe: string, checkpoint: string, tick: (reused: boolean) => void): ItemHooks<T> {
  const memo = dir?.memo<T>(probe, checkpoint);
  let reused = false;
  return {
    // A finished item read back from the log is progress, but not work for the ETA.
    ...(memo ? { memo: { get: (id: string) => { const v = memo.get(id); reused = v !== undefined; return v; }, put: (id: string, v: T) => memo.put(id, v) } } : {}),
    onItem: () => { tick(reused); reused = false; },
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

/** Runs `run` with each checkpoint's backend in turn, one open at a time, under one progress display. */
export async function forEachCheckpoint<R>(
  checkpoints: string[], options: CheckpointLoopOptions,
  run: (checkpoint: string, backend: CompletionBackend, tick: (reused?: boolean) => void) => Promise<R>,
): Promise<{ results: R[]; failures: Failure[] }> {
  const progress = createProgress({ total: checkpoints.length * options.units, perCheckpoint: checkpoints.map((name) => ({ name, units: options.units })), enabled: !options.quiet });
  const results: R[] = [];
  const failures: Failure[] = [];
  try {
    for (const ckpt of checkpoints) {
      progress.label(`${options.label ? `${options.label}: ` : ''}${ckpt}`);
      try {
        const backend = await openBackend(ckpt, { http: options.http ?? {}, ...(options.cache ? { cache: options.cache } : {}), ...(options.bos ? { bos: options.bos } : {}), ...(options.dtype ? { dtype: options.dtype } : {}) });
        try {
          const bos = options.dir ? await backend.bos?.() : undefined;
          if (bos) options.dir!.recordBos(ckpt, bos);
          results.push(await run(ckpt, backend, (reused = false) => progress.tick(ckpt, reused)));
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
  run: ScoringRun, probe: string,
  score: (checkpoint: string, backend: CompletionBackend, hooks: ItemHooks<T>) => Promise<R>,
): Promise<{ results: R[]; failures: Failure[] }> {
  return forEachCheckpoint(run.checkpoints, { units: run.items.length, quiet: run.quiet, http: run.http, cache: run.cache, dtype: run.dtype, label: probe, bos: run.bos, dir: run.dir },
    (ckpt, backend, tick) => score(ckpt, backend, itemHooks<T>(run.dir, probe, ckpt, tick)));
}

/** The `errors` field of a verb's JSON, and the exit code they imply: 2 for bad input or environment, else 1 (a server or graph that failed). */
export function reportFailures(failures: Failure[]): Record<string, unknown> {
  if (failures.length === 0) return {};
  for (const f of failures) process.stderr.write(`probe: ${f.message}\n`);
  // 2 when any checkpoint was bad input or environment (a mismatched tokenizer), else 1.
  process.exitCode = Math.max(...failures.map((f) => f.exitCode));
  return { errors: failures.map((f) => (f instanceof InputError ? { file: f.location.file, field: f.location.field ?? null, message: f.message } : { file: null, field: null, message: f.message })) };
}

/** Prints the verb's JSON document (with --json) and keeps it as the run's results.json (with --out). */
export function emitResults(run: Pick<ScoringRun, 'dir' | 'quiet'>, document: Record<string, unknown>): void {
  const file = run.dir?.writeResults(document);
  if (run.quiet) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  else if (file) process.stderr.write(`\nResults: ${file}\n`);
}
