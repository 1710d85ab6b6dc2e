/**
 * What every scoring verb shares on the command line: the flags naming checkpoints, probe
 * items, run directory and cache, checked before any work; and how a verb reports failed
 * checkpoints and prints its results. The loop over checkpoints is pipeline/checkpoint-loop.ts.
 */
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import { type Checkpoint, resolveCheckpoint } from '../backends/checkpoint.ts';
import { embeddedCheckpointDirs, EMBEDDED_PROBES } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { servedAs, type Failure, type ScoringRun } from '../pipeline/checkpoint-loop.ts';
import { loadProbeItems } from '../probes/load.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { checkpointKey as episodesDirName } from '../swe/store.ts';
import { checkpointRecords, probeSetRecord, RunDir } from '../store/run-dir.ts';
import { positiveInteger } from './args.ts';
import { bosConfig } from '../backends/bos.ts';
import { addBosOption, type BosFlags } from './bos-option.ts';
import { addCheckpointOptions, checkpointConfig, type CheckpointFlags } from './checkpoint-options.ts';
import { addHttpOptions, httpOptions, type HttpFlags } from './http-options.ts';
import { addRunOptions, checkResume, resultCache, type RunFlags } from './run-options.ts';

export interface ScoringFlags extends HttpFlags, RunFlags, BosFlags, CheckpointFlags {
  ckpt?: string[];
  probes?: string;
  json?: boolean;
  limit?: number;
}

export function addScoringOptions(command: Command): Command {
  return addRunOptions(
    addBosOption(
      addHttpOptions(
        addCheckpointOptions(
          command.option(
            '--ckpt <path|url...>',
            'checkpoint directories (Hugging Face safetensors, run in process or by vLLM: --engine; or ONNX, transformers.js layout), GGUF files (served by llama-server: sampling verbs only) or server URLs (http://host:8000/v1; replicas comma-separated); default: the embedded ladder',
          ),
        ),
      )
        .option('--probes <file|dir>', 'probe items (.jsonl file or a directory of them); default: the shipped demo probes')
        .option('--limit <n>', 'use only the first N probe items', positiveInteger)
        .option('--json', 'print one JSON document on stdout'),
    ),
  );
}

/** The checkpoints named by `--ckpt`, or the embedded ladder; each checked before any work. */
/** `scores`: the verb scores prompts, which a checkpoint served by llama.cpp cannot (refused here, before any work). */
export function resolveCheckpoints(
  ckpt: string[] | undefined,
  http: HttpBackendOptions = {},
  how: CheckpointFlags = {},
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

/**
 * Checks every input before any work (so a typo never costs a finished result) and opens
 * the run directory: a new one, or with --resume the same run continued.
 */
export function prepareScoringRun(
  flags: ScoringFlags,
  verb: string,
  settings: {
    config: Record<string, unknown>;
    seeds?: Record<string, number>;
    select?: (items: ProbeItem[]) => ProbeItem[];
    /** The verb scores prompts (BPB, MCQ): checkpoints whose engine cannot are refused up front. */
    scores?: boolean;
    /** The probe set without `--probes` (default: every shipped set; the sampling verbs: EMBEDDED_SAMPLING_PROBES). */
    defaultProbes?: string;
  },
): ScoringRun {
  checkResume(flags);
  const source = flags.probes ?? settings.defaultProbes ?? EMBEDDED_PROBES;
  let items = loadProbeItems(source);
  if (settings.select) items = settings.select(items);
  if (flags.limit !== undefined) items = items.slice(0, flags.limit);
  const http = httpOptions(flags, flags.ckpt);
  const checkpoints = resolveCheckpoints(flags.ckpt, http, flags, settings.scores);
  const dir = flags.out
    ? RunDir.open(
        flags.out,
        {
          verb,
          config: { ...settings.config, ...servedAs(http), ...bosConfig(flags.bos), ...checkpointConfig(flags) },
          checkpoints: checkpointRecords(checkpoints),
          probe_set: probeSetRecord(source, items),
          seeds: settings.seeds ?? {},
        },
        { resume: Boolean(flags.resume) },
      )
    : undefined;
  if (dir?.status === 'resumed' && !flags.json) process.stderr.write(`Resuming the run in ${dir.dir}\n`);
  return {
    items,
    checkpoints,
    http,
    dtype: flags.dtype,
    engine: flags.engine,
    cache: resultCache(flags),
    dir,
    quiet: Boolean(flags.json),
    ...(flags.bos ? { bos: flags.bos } : {}),
  };
}

/** The run directory of a verb run without --out: runs/<verb>-<UTC time>. */
export function timestampedRunDir(verb: string): string {
  return join('runs', `${verb}-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}`);
}

/** The `errors` field of a verb's JSON, and the exit code they imply: 2 for bad input or environment, else 1 (a server or graph that failed). */
export function reportFailures(failures: Failure[]): Record<string, unknown> {
  if (failures.length === 0) return {};
  for (const f of failures) process.stderr.write(`probe: ${f.message}\n`);
  // 2 when any checkpoint was bad input or environment (a mismatched tokenizer), else 1.
  process.exitCode = Math.max(...failures.map((f) => f.exitCode));
  return {
    errors: failures.map((f) =>
      f instanceof InputError
        ? { file: f.location.file, field: f.location.field ?? null, message: f.message }
        : { file: null, field: null, message: f.message },
    ),
  };
}

/** Prints the verb's JSON document (with --json) and keeps it as the run's results.json (with --out). */
export function emitResults(run: Pick<ScoringRun, 'dir' | 'quiet'>, document: Record<string, unknown>): void {
  const file = run.dir?.writeResults(document);
  if (run.quiet) process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  else if (file) process.stderr.write(`\nResults: ${file}\n`);
}

/** `--include-controls`, as screen and demo say it. */
export const INCLUDE_CONTROLS_HELP =
  'treat controls (config.json probe_ladder.control: checkpoints that have seen the probes) as candidates: shortlisted and recommended like any other';
