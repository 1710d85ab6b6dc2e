/**
 * What every scoring verb shares on the command line: the flags naming checkpoints, probe
 * items, run directory and cache; and how a verb prints its results. Opening the run is
 * pipeline/scoring-run.ts, the loop over checkpoints pipeline/checkpoint-loop.ts, failed
 * checkpoints reported by pipeline/failures.ts.
 */
import type { Command } from 'commander';
import { EMBEDDED_PROBES } from '../embedded.ts';
import type { ScoringRun } from '../pipeline/checkpoint-loop.ts';
import { openScoringRun } from '../pipeline/scoring-run.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { positiveInteger } from './args.ts';
import { addBosOption, type BosFlags } from './bos-option.ts';
import { addCheckpointOptions, type CheckpointFlags } from './checkpoint-options.ts';
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

/**
 * The scoring run the flags ask for (pipeline/scoring-run.ts checks every input and opens
 * the run directory); `--resume` without `--out` is refused first.
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
  return openScoringRun({
    verb,
    out: flags.out,
    resume: Boolean(flags.resume),
    probes: flags.probes ?? settings.defaultProbes ?? EMBEDDED_PROBES,
    select: settings.select,
    limit: flags.limit,
    ckpt: flags.ckpt,
    scores: settings.scores,
    http: httpOptions(flags, flags.ckpt),
    dtype: flags.dtype,
    engine: flags.engine,
    bos: flags.bos,
    cache: resultCache(flags),
    quiet: Boolean(flags.json),
    config: settings.config,
    seeds: settings.seeds,
  });
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
