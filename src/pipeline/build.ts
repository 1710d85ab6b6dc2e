/**
 * Building a probe set as `probe build` and `probe demo` do it: replay every trajectory
 * against its task, cut a probe item at T* per context format, search distractors.
 * A bad trajectory is a rejection, not a stop: the others are still built.
 */
import { createHash } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { CompletionBackend } from '../backends/types.ts';
import { describeCause, InputError } from '../errors.ts';
import { probeItemFrom, withDistractors, type RestoreMode } from '../replay/build.ts';
import { taskForTrajectory } from '../verify/load-task.ts';
import type { VerdictCache } from '../replay/distractors.ts';
import type { ContextFormat } from '../replay/render-context.ts';
import { replayTrajectory, type ReplayOptions } from '../replay/replay.ts';
import { placeTask } from '../replay/workdir.ts';
import { createProgress } from '../report/progress.ts';
import { enterStage } from '../report/run-stages.ts';
import { SandboxPool } from '../sandbox/pool.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { ItemMemo } from '../probes/memo.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { probeQuality, type ProbeQualityReport } from '../report/probe-quality.ts';
import { trajectoryLengths } from '../report/trajectory-lengths.ts';
import { importTrajectory } from '../trajectories/import.ts';
import type { Trajectory } from '../schema/trajectory.ts';
import { isDatasetFile, trajectoryRowCount, trajectoryRows, type TrajectoryRowCounts } from '../trajectories/datasets/trajectory-rows.ts';
import { taskForRow } from '../trajectories/datasets/row-task.ts';
import { streamRegularFile } from '../util/safe-tree.ts';

export interface BuildSettings {
  /** A directory of trajectory files, or a dataset file of trajectory rows (.parquet, .jsonl, .json). */
  trajectories: string;
  /** Dataset rows recording an unresolved run are skipped unless this is set. */
  includeUnresolved?: boolean | undefined;
  tasks: LoadedTask[];
  contexts: ContextFormat[];
  restore: RestoreMode;
  distractors: boolean;
  /** Actions sampled from a checkpoint at T*, offered as distractor candidates too. */
  sampler?: { name: string; backend: CompletionBackend; n: number; seed: number } | undefined;
  replay: ReplayOptions;
  quiet: boolean;
  /** Trajectories already built (a resumed build), by file name; new ones are saved as they finish. */
  memo?: ItemMemo<TrajectoryBuild> | undefined;
}

/**
 * How a trajectory ended: `accepted` (a probe at T*), `rejected` by its replay, `flaky` (its
 * final verdict varied, so it is rejected too), or `bad-input` (unreadable, or no task).
 */
export type TrajectoryStatus = 'accepted' | 'rejected' | 'flaky' | 'bad-input';

export interface TrajectoryOutcome {
  trajectory: string;
  task: string | null;
  status: TrajectoryStatus;
  decisiveStep: number | null;
  rejected: string | null;
}

/** Outcomes counted by status (the counts add up to the number of trajectories). */
export type BuildCounts = Record<TrajectoryStatus, number>;

export function countOutcomes(outcomes: readonly TrajectoryOutcome[]): BuildCounts {
  const counts: BuildCounts = { accepted: 0, rejected: 0, flaky: 0, 'bad-input': 0 };
  // A build resumed from a progress log written before outcomes had a status: rejected or not is all it says.
  for (const o of outcomes) counts[o.status ?? (o.rejected ? 'rejected' : 'accepted')]++;
  return counts;
}

/** The summary line: how many trajectories were accepted, rejected, flaky, bad input. */
export function describeCounts(c: BuildCounts): string {
  return `${c.accepted} accepted, ${c.rejected} rejected, ${c.flaky} flaky, ${c['bad-input']} bad input`;
}

/** What one trajectory gave: its probe items (one per context format) or why it was rejected. */
export interface TrajectoryBuild {
  outcome: TrajectoryOutcome;
  items: ProbeItem[];
}

export interface BuildOutcome {
  items: ProbeItem[];
  trajectories: TrajectoryOutcome[];
  /** Trajectories rejected as bad input (a malformed file or row, no task). */
  inputErrors: number;
  /** Dataset rows not built: runs that did not resolve their task, rows for tasks not given. */
  skipped?: { unresolved: number; noTask: number };
}

/**
 * The error that makes one trajectory bad input, or undefined for one that must stop the
 * build. A stack overflow is the first: reading too deep a document (one the depth checks of
 * the importers did not see) is that document's problem, and the others still build.
 */
function trajectoryInputError(error: unknown, source: string): InputError | undefined {
  if (error instanceof InputError) return error;
  if (error instanceof RangeError && /call stack/i.test(error.message))
    return new InputError({ file: source }, 'nests too deeply to read (the stack overflowed); not built', { cause: error });
  return undefined;
}

/**
 * Refuses a trajectory whose probe items take ids another trajectory's items have (say
 * `x.mini.json` beside `x.mini.traj.json`): a probe set with a repeated id cannot be loaded.
 */
function claimItemIds(built: TrajectoryBuild, owners: Map<string, string>, source: string): void {
  const taken = built.items.find((item) => owners.has(item.id));
  if (taken)
    throw new InputError(
      { file: source, field: 'id' },
      `its probe item id "${taken.id}" is already the id of an item from ${owners.get(taken.id)}`,
    );
  for (const item of built.items) owners.set(item.id, built.outcome.trajectory);
}

/** A dataset file of trajectory rows, rather than a directory of trajectory files. */
export function isTrajectoryDataset(path: string): boolean {
  return isDatasetFile(path) && Boolean(statSync(path, { throwIfNoEntry: false })?.isFile());
}

export function trajectoryFiles(dir: string): string[] {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new InputError({ file: dir }, 'not a directory of trajectories nor a dataset file of trajectory rows (.parquet, .jsonl, .json)');
  const files = readdirSync(dir)
    .filter((f) => !f.startsWith('.'))
    .sort()
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());
  if (files.length === 0) throw new InputError({ file: dir }, 'holds no trajectory files');
  return files;
}

async function buildTrajectory(file: string, s: BuildSettings, root: string): Promise<TrajectoryBuild> {
  const task = taskForTrajectory(file, s.tasks);
  if (!task) throw new InputError({ file }, 'no task whose instance_id starts its file name');
  return buildOne(importTrajectory(file), file, task, s, root);
}

async function buildOne(trajectory: Trajectory, name: string, given: LoadedTask, s: BuildSettings, root: string): Promise<TrajectoryBuild> {
  // The pool's sandboxes hold the repository where the replay will look for it.
  const { task } = placeTask(trajectory, given, s.replay.workdir);
  const pool = new SandboxPool(s.replay.openSandbox, task, s.replay.concurrency ?? 4);
  try {
    const replay = await replayTrajectory(trajectory, task, { ...s.replay, pool });
    const cache: VerdictCache = new Map();
    const repoFiles = replay.decisiveStep ? (await pool.lease((sb) => sb.exec('git ls-files'))).output.split('\n').filter(Boolean) : [];
    const items: ProbeItem[] = [];
    for (const format of s.contexts) {
      const item = probeItemFrom(trajectory, task, replay, format, root, s.restore);
      if (item)
        items.push(s.distractors ? await withDistractors(item, trajectory, task, replay, format, pool, cache, repoFiles, s.sampler) : item);
    }
    const status: TrajectoryStatus = !replay.rejected ? 'accepted' : replay.final?.flaky ? 'flaky' : 'rejected';
    return {
      outcome: {
        trajectory: name,
        task: task.instance_id,
        status,
        decisiveStep: replay.decisiveStep?.index ?? null,
        rejected: replay.rejected,
      },
      items,
    };
  } finally {
    await pool.close();
  }
}

/** A probe set as JSON Lines, written whole or not at all. */
export function writeProbeItems(file: string, items: readonly ProbeItem[]): void {
  writeFileAtomic(file, items.map((i) => JSON.stringify(i)).join('\n') + (items.length ? '\n' : ''));
}

/**
 * The probe set's quality report (report/probe-quality.ts), written beside it as
 * `<out>.quality.json`: what `probe inspect <out> --json` prints, kept with the set it describes.
 */
export function writeQualityReport(
  out: string,
  items: readonly ProbeItem[],
  trajectories: string,
): { file: string; report: ProbeQualityReport } {
  // Items name their trajectory relative to the directory above the trajectories, as buildProbeSet writes them.
  const report = probeQuality(items, { trajectoryLengths: trajectoryLengths(items, [resolve(trajectories, '..')]) });
  const file = `${out}.quality.json`;
  writeFileAtomic(file, `${JSON.stringify(report, null, 2)}\n`);
  return { file, report };
}

/** A file's bytes hashed a chunk at a time (a dataset may be gigabytes), through safe-tree: a FIFO or a device is refused, naming it. */
function hashFile(hash: ReturnType<typeof createHash>, file: string): void {
  streamRegularFile(file, { maxBytes: Number.POSITIVE_INFINITY, what: 'the trajectories' }, (chunk) => hash.update(chunk));
}

/** A hash of every trajectory file's name and bytes (or the dataset file's): a resumed build must see the same ones. */
export function trajectoriesHash(path: string): string {
  const hash = createHash('sha256');
  for (const file of isTrajectoryDataset(path) ? [path] : trajectoryFiles(path)) {
    hash.update(basename(file)).update('\0');
    hashFile(hash, file);
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** One row of a dataset per trajectory, matched to its task by `instance_id`. */
async function buildDataset(s: BuildSettings): Promise<BuildOutcome> {
  const file = s.trajectories;
  const root = resolve(file, '..');
  const tasks = new Map(s.tasks.map((t) => [t.instance_id, t]));
  const counts: TrajectoryRowCounts = { rows: 0, unresolved: 0 };
  const skipped = { unresolved: 0, noTask: 0 };
  const outcome: BuildOutcome = { items: [], trajectories: [], inputErrors: 0, skipped };
  enterStage('build');
  const progress = createProgress({ total: (await trajectoryRowCount(file)) ?? 0, enabled: !s.quiet });
  const owners = new Map<string, string>();
  let ticked = 0;
  // Rows read but not built (unresolved) count towards the file's total without taking time.
  const catchUp = (rows: number) => {
    for (; ticked < rows; ticked++) progress.tick(undefined, true);
  };
  try {
    for await (const row of trajectoryRows(file, { includeUnresolved: Boolean(s.includeUnresolved) }, counts)) {
      catchUp(counts.rows - 1);
      ticked++;
      const known = s.memo?.get(row.key);
      try {
        if (row.problem) throw row.problem;
        const task = taskForRow(row, tasks);
        if (!task) {
          // A dataset covers many tasks; rows for tasks not given are not built.
          skipped.noTask++;
          progress.tick(undefined, true);
          continue;
        }
        progress.label(`replaying ${row.name}`);
        const built = known ?? (await buildOne(row.trajectory(), row.name, task, s, root));
        if (!known) s.memo?.put(row.key, built);
        claimItemIds(built, owners, row.source);
        outcome.items.push(...built.items);
        outcome.trajectories.push(built.outcome);
      } catch (caught) {
        const error = trajectoryInputError(caught, row.source);
        if (!error) throw caught;
        // A malformed row is a rejection naming its index and field; the other rows are still built.
        outcome.inputErrors++;
        outcome.trajectories.push({
          trajectory: row.name,
          task: row.instanceId,
          status: 'bad-input',
          decisiveStep: null,
          rejected: describeCause(error),
        });
      }
      progress.tick(undefined, known !== undefined);
    }
    catchUp(counts.rows);
  } finally {
    progress.stop();
  }
  skipped.unresolved = counts.unresolved;
  return outcome;
}

/** Trajectory files built at once: each one's replay waits on its jails, and two cores can run several. */
const TRAJECTORIES_IN_FLIGHT = 3;

export async function buildProbeSet(s: BuildSettings): Promise<BuildOutcome> {
  if (isTrajectoryDataset(s.trajectories)) return buildDataset(s);
  const files = trajectoryFiles(s.trajectories);
  const root = resolve(s.trajectories, '..');
  const outcome: BuildOutcome = { items: [], trajectories: [], inputErrors: 0 };
  enterStage('build');
  const progress = createProgress({ total: files.length, enabled: !s.quiet });
  const owners = new Map<string, string>();
  // TRAJECTORIES_IN_FLIGHT trajectories are built at once (a replay mostly waits on its jails): each one that finishes starts the
  // next not yet started, whichever finished; results are taken in file order.
  const building = new Map<number, Promise<{ built: TrajectoryBuild } | { error: unknown }>>();
  let nextToStart = 0;
  const startNext = () => {
    while (nextToStart < files.length && s.memo?.get(basename(files[nextToStart]!)) !== undefined) nextToStart++;
    if (nextToStart >= files.length) return;
    const index = nextToStart++;
    const settled = buildTrajectory(files[index]!, s, root).then(
      (built) => ({ built }),
      (error: unknown) => ({ error }),
    );
    building.set(index, settled);
    void settled.then(startNext);
  };
  try {
    for (let i = 0; i < TRAJECTORIES_IN_FLIGHT; i++) startNext();
    for (const [index, file] of files.entries()) {
      progress.label(`replaying ${file}`);
      const known = s.memo?.get(basename(file));
      try {
        const settled = known ? { built: known } : await building.get(index)!;
        building.delete(index);
        if ('error' in settled) throw settled.error;
        const built = settled.built;
        // A replay's verdict is kept (a rejection included); a file that could not be read is not, so a fixed file is built next time.
        if (!known) s.memo?.put(basename(file), built);
        claimItemIds(built, owners, file);
        outcome.items.push(...built.items);
        outcome.trajectories.push(built.outcome);
      } catch (caught) {
        const error = trajectoryInputError(caught, file);
        if (!error) throw caught;
        // A bad file is recorded as a rejection; the other trajectories are still built.
        outcome.inputErrors++;
        outcome.trajectories.push({
          trajectory: file,
          task: taskForTrajectory(file, s.tasks)?.instance_id ?? null,
          status: 'bad-input',
          decisiveStep: null,
          rejected: describeCause(error),
        });
      }
      progress.tick(undefined, known !== undefined);
    }
  } finally {
    progress.stop();
  }
  return outcome;
}
