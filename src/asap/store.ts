/**
 * The ASAP run directory. Everything a run computes is written as it happens, so a killed
 * run resumes where it stopped:
 *
 *   asap.json                                   the protocol settings (a rerun must match them)
 *   prefixes/<instance>.json                    the reference prefix, built once for all checkpoints
 *   episodes/<checkpoint>/<instance>/run-<r>.jsonl   start line, one line per step, end line
 *   episodes/<checkpoint>/<instance>/run-<r>.md      the transcript as the model saw it
 *   results.json                                written when the run finishes
 *
 * Episode files are append-only and every line is written whole; a line cut short by a
 * kill (no final newline) is ignored when reading, so a crash never breaks a file.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { InputError } from '../errors.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import type { RunBehaviour } from './behaviour.ts';
import type { EpisodeStep, Termination } from './episode.ts';
import type { AsapPrefix } from './prefix.ts';

export interface EpisodeStart { type: 'start'; checkpoint: string; instance: string; run: number; seed: number }
export interface EpisodeEnd {
  type: 'end';
  termination: Termination;
  resolved: boolean;
  /** The verifier's reason when it could not grade, or why the patch did not apply. */
  reason: string | null;
  final_patch: string;
  fail_to_pass: { passed: string[]; failed: string[] };
  pass_to_pass: { passed: string[]; failed: string[] };
  behaviour: RunBehaviour;
  model_ms: number;
  sandbox_ms: number;
  /** Restoring the sandbox to the episode's starting state. */
  setup_ms: number;
  verify_ms: number;
  wall_ms: number;
}

export interface SavedEpisode { start: EpisodeStart | null; steps: EpisodeStep[]; end: EpisodeEnd | null }

function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** A file-system-safe name for a checkpoint (its path, flattened). */
export function checkpointKey(checkpoint: string): string {
  return checkpoint.replace(/^(\.?\/)+/, '').replace(/\/+$/, '').replace(/[^A-Za-z0-9._-]+/g, '_') || 'checkpoint';
}

export class AsapStore {
  constructor(readonly dir: string) {}

  /** Records the settings, or checks that a resumed run uses the same ones. */
  claim(settings: Record<string, unknown>): 'new' | 'resumed' {
    const file = join(this.dir, 'asap.json');
    // A directory whose episodes have not started yet takes the new settings (and drops its prefixes).
    if (existsSync(file) && !existsSync(join(this.dir, 'episodes'))) rmSync(join(this.dir, 'prefixes'), { recursive: true, force: true });
    else if (existsSync(file)) {
      const previous = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
      const differs = Object.keys({ ...previous, ...settings }).filter((k) => JSON.stringify(previous[k]) !== JSON.stringify(settings[k]));
      if (differs.length > 0) {
        throw new InputError({ file, field: differs[0] }, `this directory holds an ASAP run with other settings (${differs.map((k) => `${k}: ${JSON.stringify(previous[k])} → ${JSON.stringify(settings[k])}`).join('; ')}); use another --out or the same settings to resume`);
      }
      return 'resumed';
    }
    writeJsonAtomic(file, settings);
    return 'new';
  }

  prefixFile(instance: string): string {
    return join(this.dir, 'prefixes', `${instance}.json`);
  }

  readPrefix(instance: string): AsapPrefix | undefined {
    const file = this.prefixFile(instance);
    return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as AsapPrefix) : undefined;
  }

  writePrefix(prefix: AsapPrefix): void {
    writeJsonAtomic(this.prefixFile(prefix.instance), prefix);
  }

  episodeFile(checkpoint: string, instance: string, run: number, ext: 'jsonl' | 'md'): string {
    return join(this.dir, 'episodes', checkpointKey(checkpoint), instance, `run-${run}.${ext}`);
  }

  readEpisode(checkpoint: string, instance: string, run: number): SavedEpisode {
    const file = this.episodeFile(checkpoint, instance, run, 'jsonl');
    const saved: SavedEpisode = { start: null, steps: [], end: null };
    if (!existsSync(file)) return saved;
    const text = readFileSync(file, 'utf8');
    const complete = text.slice(0, text.lastIndexOf('\n') + 1);
    for (const line of complete.split('\n')) {
      if (!line.trim()) continue;
      const record = JSON.parse(line) as { type: string };
      if (record.type === 'start') saved.start = record as EpisodeStart;
      else if (record.type === 'step') saved.steps.push(stripType(record) as unknown as EpisodeStep);
      else if (record.type === 'end') saved.end = record as EpisodeEnd;
    }
    return saved;
  }

  /** Starts an episode file afresh (a partial file of an episode that cannot resume is replaced). */
  startEpisode(start: EpisodeStart): void {
    const file = this.episodeFile(start.checkpoint, start.instance, start.run, 'jsonl');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify(start)}\n`);
  }

  appendStep(start: EpisodeStart, step: EpisodeStep): void {
    appendFileSync(this.episodeFile(start.checkpoint, start.instance, start.run, 'jsonl'), `${JSON.stringify({ type: 'step', ...step })}\n`);
  }

  endEpisode(start: EpisodeStart, end: EpisodeEnd): void {
    appendFileSync(this.episodeFile(start.checkpoint, start.instance, start.run, 'jsonl'), `${JSON.stringify(end)}\n`);
  }

  writeTranscript(start: EpisodeStart, text: string): void {
    writeFileAtomic(this.episodeFile(start.checkpoint, start.instance, start.run, 'md'), text);
  }

  writeResults(results: unknown): string {
    const file = join(this.dir, 'results.json');
    writeJsonAtomic(file, results);
    return file;
  }
}

function stripType(record: { type: string }): Record<string, unknown> {
  const { type: _type, ...rest } = record;
  return rest;
}
