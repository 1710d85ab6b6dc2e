/**
 * A trajectory dataset file (Parquet, JSONL or JSON rows, as the datasets publish them),
 * streamed row by row: only the columns a trajectory needs are read, and only resolved
 * rows are offered unless asked otherwise (a dataset of failed runs is no source of
 * decisive steps). Each row's trajectory is parsed when the caller asks for it.
 */
import { basename } from 'node:path';
import { parquetMetadataAsync } from 'hyparquet';
import { InputError } from '../../errors.ts';
import { isDatasetFile, parquetFile, readRows } from '../../datasets/rows.ts';
import type { Trajectory } from '../../schema/trajectory.ts';
import { FACT_COLUMNS, rowFacts } from './row-facts.ts';
import { rowTrajectory, TRAJECTORY_COLUMNS } from './row-trajectory.ts';

export { isDatasetFile };

export interface TrajectoryRow {
  /** 0-based position in the file. */
  index: number;
  /** `FILE#INDEX`: the trajectory's source, and where its errors point. */
  source: string;
  /** The row in the resume log: `<file name>#<index>`. */
  key: string;
  /** The row in the build's outcomes: its `traj_id`, else `key`. */
  name: string;
  /** What tells it apart from its task's other trajectories in probe item ids. */
  label: string;
  instanceId: string | null;
  /** Set when the row's task, outcome or id fields are malformed: the row is bad input. */
  problem?: InputError;
  /** The row's trajectory (parsed on first call); an `InputError` naming the row and field when it is malformed. */
  trajectory(): Trajectory;
}

export interface TrajectoryRowCounts {
  rows: number;
  /** Rows recording a run that did not resolve its task (skipped unless asked for). */
  unresolved: number;
}

/** Rows in a Parquet dataset, from its footer; undefined for line formats (counting would mean reading them all). */
export async function trajectoryRowCount(file: string): Promise<number | undefined> {
  if (!file.endsWith('.parquet')) return undefined;
  const buffer = parquetFile(file);
  try {
    return Number((await parquetMetadataAsync(buffer)).num_rows);
  } finally {
    buffer.close();
  }
}

export async function* trajectoryRows(
  file: string,
  options: { includeUnresolved: boolean },
  counts: TrajectoryRowCounts,
): AsyncGenerator<TrajectoryRow> {
  const columns = [...FACT_COLUMNS, ...TRAJECTORY_COLUMNS];
  // A row too deep to read is one bad row, reported with the others built (not the end of the file).
  for await (const { row, index, problem } of readRows(file, { columns, problems: 'yield' })) {
    counts.rows++;
    const source = `${file}#${index}`;
    const key = `${basename(file)}#${index}`;
    let facts;
    try {
      if (problem) throw problem;
      facts = rowFacts(row, source);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      yield {
        index,
        source,
        key,
        name: key,
        label: key,
        instanceId: null,
        problem: error,
        trajectory: () => {
          throw error;
        },
      };
      continue;
    }
    if (facts.resolved === false && !options.includeUnresolved) {
      counts.unresolved++;
      continue;
    }
    const trajId = facts.trajId;
    // SWE-smith's traj_id repeats the instance id: `<instance_id>.<run>`; the run tells rows of one task apart.
    const label =
      trajId && facts.instanceId && trajId.startsWith(`${facts.instanceId}.`) ? trajId.slice(facts.instanceId.length + 1) : (trajId ?? key);
    let parsed: Trajectory | undefined; // parsed once, whether to find its task or to build it
    yield {
      index,
      source,
      key,
      name: trajId ?? key,
      label,
      instanceId: facts.instanceId,
      trajectory: () => (parsed ??= { ...rowTrajectory(row, source), label }),
    };
  }
}
