/**
 * What every scoring verb shares: the checkpoints and probe items to use (checked before
 * any work), one backend open at a time, a progress bar, and broken checkpoints reported
 * without discarding the others' results.
 */
import { relative } from 'node:path';
import { Command } from 'commander';
import { checkCheckpoint, openBackend } from '../backends/open.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { embeddedCheckpointDirs, EMBEDDED_PROBES } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { loadProbeItems } from '../probes/load.ts';
import { createProgress } from '../report/progress.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { positiveInteger } from './args.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import { EndpointFailure } from '../backends/http/transport.ts';
import { ResultCache } from '../backends/cache.ts';
import { addHttpOptions, httpOptions, type HttpFlags } from './http-options.ts';

export interface ScoringFlags extends HttpFlags { ckpt?: string[]; probes?: string; json?: boolean; limit?: number; cache?: string }

export function addScoringOptions(command: Command): Command {
  return addHttpOptions(command
    .option('--ckpt <dir|url...>', 'checkpoint directories (transformers.js layout) or server URLs (http://host:8000/v1; replicas comma-separated); default: the embedded ladder'))
    .option('--probes <file|dir>', 'probe items (.jsonl file or a directory of them); default: the shipped demo probes')
    .option('--limit <n>', 'use only the first N probe items', positiveInteger)
    .option('--json', 'print one JSON document on stdout')
    .option('--cache <dir>', 'answer repeated deterministic backend calls (scores, seeded samples) from this cache directory');
}

export interface CheckpointRuns<R> {
  items: ProbeItem[];
  results: R[];
  failures: Array<InputError | EndpointFailure>;
}

/** The checkpoints named by `--ckpt`, or the embedded ladder; each checked before any work. */
export function resolveCheckpoints(ckpt: string[] | undefined, http: HttpBackendOptions = {}): string[] {
  const checkpoints = ckpt ?? embeddedCheckpointDirs().map((dir) => relative(process.cwd(), dir) || '.');
  for (const c of checkpoints) checkCheckpoint(c, http);
  return checkpoints;
}

/** Runs `run` with each checkpoint's backend in turn, one open at a time, under one progress bar. */
export async function forEachCheckpoint<R>(
  checkpoints: string[], units: number, quiet: boolean,
  run: (checkpoint: string, backend: CompletionBackend, tick: () => void) => Promise<R>,
  http: HttpBackendOptions = {},
  cache?: ResultCache,
): Promise<{ results: R[]; failures: Array<InputError | EndpointFailure> }> {
  const progress = createProgress(checkpoints.length * units, !quiet);
  const results: R[] = [];
  const failures: Array<InputError | EndpointFailure> = [];
  try {
    for (const ckpt of checkpoints) {
      try {
        const backend = await openBackend(ckpt, { http, ...(cache ? { cache } : {}) });
        try {
          results.push(await run(ckpt, backend, () => progress.tick(ckpt)));
        } finally {
          await backend.close();
        }
      } catch (error) {
        // One broken checkpoint (or unreachable server) must not discard the others' results: report it and go on.
        if (!(error instanceof InputError) && !(error instanceof EndpointFailure)) throw error;
        failures.push(error);
      }
    }
  } finally {
    progress.stop();
  }
  return { results, failures };
}

export async function runOverCheckpoints<R>(
  flags: ScoringFlags,
  select: (items: ProbeItem[]) => ProbeItem[],
  run: (checkpoint: string, backend: CompletionBackend, items: ProbeItem[], tick: () => void) => Promise<R>,
): Promise<CheckpointRuns<R>> {
  // All input is checked before any work, so a typo never costs a finished result.
  let items = select(loadProbeItems(flags.probes ?? EMBEDDED_PROBES));
  if (flags.limit !== undefined) items = items.slice(0, flags.limit);
  const http = httpOptions(flags, flags.ckpt);
  const checkpoints = resolveCheckpoints(flags.ckpt, http);
  const cache = flags.cache ? new ResultCache(flags.cache) : undefined;
  const { results, failures } = await forEachCheckpoint(checkpoints, items.length, Boolean(flags.json), (ckpt, backend, tick) => run(ckpt, backend, items, tick), http, cache);
  return { items, results, failures };
}

/** The `errors` field of a verb's JSON, and the exit code they imply: 2 for bad input, else 1 (a server that failed). */
export function reportFailures(failures: Array<InputError | EndpointFailure>): Record<string, unknown> {
  if (failures.length === 0) return {};
  for (const f of failures) process.stderr.write(`probe: ${f.message}\n`);
  process.exitCode = failures.some((f) => f instanceof InputError) ? 2 : 1;
  return { errors: failures.map((f) => (f instanceof InputError ? { file: f.location.file, field: f.location.field ?? null, message: f.message } : { file: null, field: null, message: f.message })) };
}
