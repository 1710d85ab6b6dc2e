/**
 * The ASAP run directory. Everything a run computes is written as it happens, so a killed
 * run resumes where it stopped:
 *
 *   asap.json                                   the protocol settings (a rerun must match them)
 *   prefixes/<instance>.json                    the reference prefix, built once for all checkpoints
 *                                               (ids as file names: util/file-name.ts)
 *   episodes/<checkpoint>/<instance>/run-<r>.jsonl   start line, one line per step, end line
 *   episodes/<checkpoint>/<instance>/run-<r>.md      the transcript as the model saw it
 *   results.json                                written when the run finishes
 *
 * Episode files are the run store's crash-safe logs (`JsonlLog`): append-only, every line
 * written whole, and a line cut short by a kill dropped before a resumed episode appends.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { AsapPrefixSchema, AsapSettingsSchema, EpisodeLineSchema } from '../schema/episode-records.ts';
import { JsonlLog, type LogRecords, readJsonl } from '../store/jsonl-log.ts';
import { readRecordFile } from '../store/read-record.ts';
import { changedSettings, checkResume } from '../store/resume.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { idFileName } from '../util/file-name.ts';
import type { RunBehaviour } from './behaviour.ts';
import type { EpisodeStep, Termination } from './episode.ts';
import type { AsapPrefix } from './prefix.ts';

export interface EpisodeStart {
  type: 'start';
  checkpoint: string;
  instance: string;
  run: number;
  seed: number;
}
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

export interface SavedEpisode {
  start: EpisodeStart | null;
  steps: EpisodeStep[];
  end: EpisodeEnd | null;
}

function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * A file-system-safe name for a checkpoint (its path, flattened; kept as it was so existing
 * run directories resume). A flattened `.`, `..` or over-long name goes through
 * `idFileName`, so no checkpoint's directory is the episodes directory or its parent.
 */
export function checkpointKey(checkpoint: string): string {
  const flat =
    checkpoint
      .replace(/^(\.?\/)+/, '')
      .replace(/\/+$/, '')
      .replace(/[^A-Za-z0-9._-]+/g, '_') || 'checkpoint';
  return flat === '.' || flat === '..' || flat.length > 200 ? idFileName(flat) : flat;
}

type EpisodeLine = EpisodeStart | ({ type: 'step' } & EpisodeStep) | EpisodeEnd;

/** An episode file's lines, checked as they are read back (a resumed episode continues from them). */
const EPISODE_LINES: LogRecords<EpisodeLine> = { schema: EpisodeLineSchema, what: 'an ASAP episode line' };

export class AsapStore {
  /** One log per episode file, so a resumed episode's damaged tail is cut once, before its first append. */
  private readonly logs = new Map<string, JsonlLog<EpisodeLine>>();

  constructor(readonly dir: string) {}

  private episodeLog(start: EpisodeStart): JsonlLog<EpisodeLine> {
    const file = this.episodeFile(start.checkpoint, start.instance, start.run, 'jsonl');
    let log = this.logs.get(file);
    if (!log) this.logs.set(file, (log = new JsonlLog<EpisodeLine>(file, this.dir, EPISODE_LINES)));
    return log;
  }

  /**
   * Records the settings, or checks that a resumed run uses the same ones. The run
   * directory around the store (run.json) has already said whether to resume.
   */
  claim(settings: Record<string, unknown>): 'new' | 'resumed' {
    const file = join(this.dir, 'asap.json');
    const started = existsSync(join(this.dir, 'episodes'));
    // A directory whose episodes have not started yet takes the new settings (and drops its prefixes).
    if (existsSync(file) && !started) rmSync(join(this.dir, 'prefixes'), { recursive: true, force: true });
    const stored =
      existsSync(file) && started
        ? readRecordFile(file, AsapSettingsSchema, { root: this.dir, what: 'ASAP settings (asap.json)' })
        : undefined;
    const status = checkResume({
      file,
      stored,
      settings,
      resume: 'implicit',
      refusal: '',
      differs: () =>
        `this directory holds an ASAP run with other settings (${changedSettings(stored!, settings)
          .map((k) => `${k}: ${JSON.stringify(stored![k])} → ${JSON.stringify(settings[k])}`)
          .join('; ')}); use another --out or the same settings to resume`,
    });
    if (status === 'new') writeJsonAtomic(file, settings);
    return status;
  }

  prefixFile(instance: string): string {
    return join(this.dir, 'prefixes', `${idFileName(instance)}.json`);
  }

  readPrefix(instance: string): AsapPrefix | undefined {
    const file = this.prefixFile(instance);
    return existsSync(file) ? readRecordFile(file, AsapPrefixSchema, { root: this.dir, what: 'an ASAP reference prefix' }) : undefined;
  }

  writePrefix(prefix: AsapPrefix): void {
    writeJsonAtomic(this.prefixFile(prefix.instance), prefix);
  }

  episodeFile(checkpoint: string, instance: string, run: number, ext: 'jsonl' | 'md'): string {
    return join(this.dir, 'episodes', checkpointKey(checkpoint), idFileName(instance), `run-${run}.${ext}`);
  }

  readEpisode(checkpoint: string, instance: string, run: number): SavedEpisode {
    const file = this.episodeFile(checkpoint, instance, run, 'jsonl');
    const saved: SavedEpisode = { start: null, steps: [], end: null };
    for (const record of readJsonl(file, this.dir, EPISODE_LINES)) {
      if (record.type === 'start') saved.start = record;
      else if (record.type === 'step') saved.steps.push(stripType(record));
      else saved.end = record;
    }
    return saved;
  }

  /** Starts an episode file afresh (a partial file of an episode that cannot resume is replaced). */
  startEpisode(start: EpisodeStart): void {
    const log = this.episodeLog(start);
    log.reset();
    log.append(start);
  }

  appendStep(start: EpisodeStart, step: EpisodeStep): void {
    this.episodeLog(start).append({ type: 'step', ...step });
  }

  endEpisode(start: EpisodeStart, end: EpisodeEnd): void {
    this.episodeLog(start).append(end);
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

function stripType({ type: _type, ...step }: { type: 'step' } & EpisodeStep): EpisodeStep {
  return step;
}
