/** Child process of bench/trajectory-dataset.ts: reads a trajectory dataset one way and reports rows, time and peak RSS. */
import { readAllRows } from '../src/datasets/rows.ts';
import { trajectoryRows, type TrajectoryRowCounts } from '../src/trajectories/datasets/trajectory-rows.ts';

const [file, mode] = process.argv.slice(2) as [string, 'stream' | 'whole' | 'baseline'];
const started = performance.now();
let rows = 0;
let steps = 0;
if (mode === 'stream') {
  // What `probe build --trajectories FILE.parquet` does: the rows it needs, one row group at a time.
  const counts: TrajectoryRowCounts = { rows: 0, unresolved: 0 };
  for await (const row of trajectoryRows(file, { includeUnresolved: true }, counts)) steps += row.trajectory().steps.length;
  rows = counts.rows;
} else if (mode === 'whole') {
  // The naive reader: every column of every row in memory at once.
  rows = (await readAllRows(file)).length;
}
// baseline: the same modules loaded, nothing read.
console.log(JSON.stringify({ rows, steps, ms: performance.now() - started, peakRssMb: process.resourceUsage().maxRSS / 1024 }));
