/**
 * A run directory: what a run was (run.json), what it computed item by item (one
 * append-only samples.jsonl per probe) and what it concluded (results.json).
 *
 *   run.json               verb, probe version, git commit, config, checkpoint content
 *                          hashes, probe-set hash, seeds — a resumed run must match them
 *   <probe>/samples.jsonl  one line per item × checkpoint, written as each finishes
 *   results.json           written (atomically) when the run ends
 *
 * A run that was interrupted (SIGINT, kill -9) continues with `--resume`: finished lines are
 * read back, the rest is computed. An existing run is never continued or overwritten
 * without `--resume`, and only one process writes a run at a time (`.lock`).
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { bosRecord, type BosRecord, type BosUse } from '../backends/bos.ts';
import { type Checkpoint, checkpointKey } from '../backends/checkpoint.ts';
import { REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import type { ItemMemo } from '../probes/memo.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { RunManifestSchema } from '../schema/run-manifest.ts';
import { SAMPLE_RESULTS, type SampleProbe, sampleLineSchema } from '../schema/sample-results.ts';
import { JsonlLog, type LogRecords, readJsonl } from './jsonl-log.ts';
import { readRecordFile } from './read-record.ts';
import { lockRunDir } from './run-lock.ts';
import { ensureOutputDir } from './output-path.ts';
import { checkResume, flattenSettings } from './resume.ts';

export interface CheckpointRecord {
  /** As given on the command line (what tables show). */
  name: string;
  /** What identifies it across working directories: the absolute directory, or the server URL. */
  path: string;
  /** Every file's path and bytes, hashed; null for a checkpoint behind a server. */
  content_hash: string | null;
  /** A control (has seen the probes) and its known held-out quality, as its config.json says (checkpointFacts, backends/checkpoint.ts); absent in runs from before. */
  control?: boolean;
  heldout_code_bpb?: number | null;
  /** The `--bos` policy as resolved for this checkpoint's tokenizer, once it was opened: whether a BOS was put first, which, and why. */
  bos?: BosRecord;
  /** What computed its answers, once it was opened: probe in process (and from which graph), or a server of which kind. */
  engine?: string;
}

export interface RunManifest {
  verb: string;
  probe_version: string;
  git: { commit: string | null; dirty: boolean | null };
  created: string;
  resumed: string[];
  argv: string[];
  /** Everything that decides the results; a resumed run must match it. */
  config: Record<string, unknown>;
  checkpoints: CheckpointRecord[];
  probe_set: { source: string; sha256: string; items: number } | null;
  seeds: Record<string, number>;
}

export type ManifestInput = Pick<RunManifest, 'verb' | 'config' | 'checkpoints' | 'probe_set' | 'seeds'>;

/** One finished item of one checkpoint (its absolute directory or URL), as a samples.jsonl line. */
export interface SampleLine<T> {
  checkpoint: string;
  item: string;
  result: T;
}

/**
 * run.json as a run left it, checked against its schema: bad input naming the file and
 * field where it is not one (nothing of the run is touched). Fields the schema does not
 * know are kept, so the manifest written back on resume holds all it held.
 */
function readManifest(file: string, root: string): RunManifest {
  // Runs from before checkpoints had a `path` lack it; every reader falls back to the name.
  return readRecordFile(file, RunManifestSchema, { root, what: 'a run manifest (run.json)' }) as RunManifest;
}

/**
 * The schema of a probe's sample lines: its result's, found by its name, or as the run
 * declared it (`declareSamples`: an environment's episode records). Of any other name only
 * the line around the result is checked.
 */
function sampleRecords(probe: string, declared?: z.ZodType): LogRecords<SampleLine<unknown>> {
  const result = declared ?? (Object.hasOwn(SAMPLE_RESULTS, probe) ? SAMPLE_RESULTS[probe as SampleProbe] : z.unknown());
  return { schema: sampleLineSchema(result), what: `a ${probe} sample line` };
}

export function probeVersion(): string {
  return (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

function gitState(): RunManifest['git'] {
  const head = spawnSync('git', ['-C', REPO_ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
  if (head.status !== 0) return { commit: null, dirty: null };
  const status = spawnSync('git', ['-C', REPO_ROOT, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return { commit: head.stdout.trim(), dirty: status.status === 0 ? status.stdout.trim().length > 0 : null };
}

export function checkpointRecords(checkpoints: readonly Checkpoint[]): CheckpointRecord[] {
  return checkpoints.map((c) => ({
    name: c.name,
    path: c.key,
    content_hash: c.kind === 'directory' ? c.contentHash() : null,
    ...c.facts,
  }));
}

/** The probe set as used (after selection and --limit): where it came from and a hash of its items. */
export function probeSetRecord(source: string, items: readonly unknown[]): NonNullable<RunManifest['probe_set']> {
  const hash = createHash('sha256');
  for (const item of items) hash.update(JSON.stringify(item)).update('\n');
  return { source, sha256: hash.digest('hex'), items: items.length };
}

/** A run directory that holds a run is continued only when asked to (also said by `probe demo` before its build). */
export function existingRunError(manifestFile: string): InputError {
  return new InputError({ file: manifestFile }, EXISTING_RUN);
}

const EXISTING_RUN = 'this directory already holds a run: pass --resume to continue it, or choose another --out';

/** What must match for a run to be continued, flat, in the order a mismatch is reported. */
function resumeKey(m: Pick<RunManifest, 'verb' | 'config' | 'seeds' | 'probe_set'>): Record<string, unknown> {
  return { verb: m.verb, ...flattenSettings('config', m.config), seeds: m.seeds, 'probe_set.sha256': m.probe_set?.sha256 };
}

/** Files a run writes when a stage or the whole run is done. */
const CONCLUSIONS = ['results.json', 'cheap.json', 'passk.json', join('asap', 'results.json')];

/** Whether a run directory holds anything computed: a sample log, ASAP episodes, results, Slurm jobs' work. */
function holdsWork(dir: string): boolean {
  return readdirSync(dir, { withFileTypes: true }).some(
    (e) =>
      e.name === 'results.json' ||
      e.name === 'episodes' ||
      // Slurm jobs submitted (probe screen --slurm): their results are under jobs/, collected by a rerun with --resume.
      e.name === 'slurm.jsonl' ||
      (e.isDirectory() && (existsSync(join(dir, e.name, 'samples.jsonl')) || existsSync(join(dir, e.name, 'episodes')))),
  );
}

export class RunDir {
  readonly manifest: RunManifest;
  readonly status: 'new' | 'resumed';
  private readonly logs = new Map<string, { log: JsonlLog<SampleLine<unknown>>; done: Map<string, unknown> }>();
  private readonly declared = new Map<string, z.ZodType>();

  private constructor(
    readonly dir: string,
    manifest: RunManifest,
    status: 'new' | 'resumed',
  ) {
    this.manifest = manifest;
    this.status = status;
  }

  static manifestFile(dir: string): string {
    return join(dir, 'run.json');
  }

  /** Starts a run in `dir`, or (with `resume`) continues the one there after checking it is the same run. */
  static open(dir: string, input: ManifestInput, options: { resume: boolean; argv?: string[] }): RunDir {
    const file = RunDir.manifestFile(dir);
    const now = new Date().toISOString();
    ensureOutputDir(dir, '--out');
    lockRunDir(dir);
    // A run that stopped on bad input before any work is simply started again.
    let previous: RunManifest | undefined;
    if (existsSync(file) && holdsWork(dir)) {
      if (!options.resume) throw existingRunError(file);
      previous = readManifest(file, dir);
    }
    // Checkpoints may be added to a run; one that is in it must be byte-for-byte the same.
    const known = (c: CheckpointRecord) => previous?.checkpoints.find((p) => (p.path ?? resolve(p.name)) === c.path);
    const hashes = (of: (c: CheckpointRecord) => CheckpointRecord | undefined) =>
      Object.fromEntries(input.checkpoints.filter(known).map((c) => [`checkpoints.${c.name}.content_hash`, of(c)!.content_hash]));
    const status = checkResume({
      file,
      stored: previous && { ...resumeKey(previous), ...hashes(known) },
      settings: { ...resumeKey(input), ...hashes((c) => c) },
      resume: options.resume,
      refusal: EXISTING_RUN,
      differs: (_field, was, now) =>
        `the run here was started with ${JSON.stringify(was)}, this one has ${JSON.stringify(now)}; resume with the same settings or choose another --out`,
    });
    if (status === 'new') {
      const manifest: RunManifest = {
        verb: input.verb,
        probe_version: probeVersion(),
        git: gitState(),
        created: now,
        resumed: [],
        argv: options.argv ?? process.argv.slice(2),
        config: input.config,
        checkpoints: input.checkpoints,
        probe_set: input.probe_set,
        seeds: input.seeds,
      };
      writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`);
      return new RunDir(dir, manifest, 'new');
    }
    const resumed = previous!;
    const checkpoints = [...resumed.checkpoints, ...input.checkpoints.filter((c) => !known(c))];
    const manifest: RunManifest = { ...resumed, checkpoints, resumed: [...(resumed.resumed ?? []), now] };
    writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`);
    // What the run concluded before is no longer its conclusion: a report must wait for this one to finish.
    for (const concluded of CONCLUSIONS) rmSync(join(dir, concluded), { force: true });
    return new RunDir(dir, manifest, 'resumed');
  }

  /** Records how `--bos` resolved for a checkpoint (known once its backend is open) in run.json. */
  /** Records how an opened checkpoint is served — its BOS policy as resolved, and what runs it — where that is new. */
  recordServing(checkpoint: string, serving: { bos?: BosUse | undefined; engine?: string | undefined }): void {
    const path = checkpointKey(checkpoint);
    const record = this.manifest.checkpoints.find((c) => (c.path ?? resolve(c.name)) === path);
    if (!record) return;
    const next = {
      ...record,
      ...(serving.bos ? { bos: bosRecord(serving.bos) } : {}),
      ...(serving.engine ? { engine: serving.engine } : {}),
    };
    if (JSON.stringify(next) === JSON.stringify(record)) return;
    Object.assign(record, next);
    writeFileAtomic(RunDir.manifestFile(this.dir), `${JSON.stringify(this.manifest, null, 2)}\n`);
  }

  /**
   * Adds a checkpoint to a run that grows while it runs (`probe watch`), recorded in run.json
   * at once. One the run has already is accepted only byte-for-byte the same: a checkpoint
   * rewritten under its old name is refused (its field named), not scored on top of the old.
   */
  addCheckpoint(record: CheckpointRecord): void {
    const known = this.manifest.checkpoints.find((c) => (c.path ?? resolve(c.name)) === record.path);
    if (known) {
      if (known.content_hash !== record.content_hash)
        throw new InputError(
          { file: record.name, field: 'content_hash' },
          `its files changed after this run (${this.dir}) scored it: a checkpoint is scored once; give the new one another name`,
        );
      return;
    }
    this.manifest.checkpoints.push(record);
    writeFileAtomic(RunDir.manifestFile(this.dir), `${JSON.stringify(this.manifest, null, 2)}\n`);
  }

  /** The schema every result of `probe`'s samples is read back through (an environment's episode record), before any is read. */
  declareSamples(probe: string, result: z.ZodType): void {
    this.declared.set(probe, result);
  }

  samplesFile(probe: string): string {
    return join(this.dir, probe, 'samples.jsonl');
  }

  private logOf(probe: string) {
    let entry = this.logs.get(probe);
    if (!entry) {
      const log = new JsonlLog<SampleLine<unknown>>(this.samplesFile(probe), this.dir, sampleRecords(probe, this.declared.get(probe)));
      const done = new Map<string, unknown>();
      for (const line of log.read()) done.set(JSON.stringify([checkpointKey(line.checkpoint), line.item]), line.result);
      entry = { log, done };
      this.logs.set(probe, entry);
    }
    return entry;
  }

  /** Every finished item of one probe (a line per item × checkpoint), each checked against the probe's schema. */
  samples<T>(probe: string): SampleLine<T>[] {
    return readJsonl(this.samplesFile(probe), this.dir, sampleRecords(probe, this.declared.get(probe))) as SampleLine<T>[];
  }

  /** The finished items of one probe × checkpoint, and where new ones are saved. */
  memo<T>(probe: string, checkpoint: string): ItemMemo<T> {
    const entry = this.logOf(probe);
    const path = checkpointKey(checkpoint);
    return {
      get: (id) => entry.done.get(JSON.stringify([path, id])) as T | undefined,
      put: (id, result) => {
        entry.log.append({ checkpoint: path, item: id, result });
        entry.done.set(JSON.stringify([path, id]), result);
      },
    };
  }

  writeResults(results: unknown, name = 'results.json'): string {
    const file = join(this.dir, name);
    writeFileAtomic(file, `${JSON.stringify(results, null, 2)}\n`);
    return file;
  }
}
