/**
 * Trajectory datasets streamed, not loaded: a Parquet dataset in the layout of
 * nebius/SWE-agent-trajectories (flat facts, `trajectory` a list of turns, and the bulky
 * `eval_logs` a build never reads), written here at a given size, then read in a child
 * process each:
 *   stream   — trajectoryRows, as `probe build --trajectories FILE.parquet` reads it (needed
 *              columns only, one row group at a time, each row's trajectory imported);
 *   whole    — every column of every row in memory at once (readAllRows);
 *   baseline — the same modules loaded, nothing read.
 * Prints peak RSS above a bare process, as a fraction of the file's size, and whether each
 * read completes in a V8 heap of 64 MiB: the goal is that streaming needs about one row
 * group whatever the file's size (V8 collects lazily, so with a large heap its RSS still
 * drifts up), while the whole read grows with the file.
 * Usage: npx tsx bench/trajectory-dataset.ts [--rows N] (default 2000; ~60 KB a row)
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';

const rowsArg = process.argv.indexOf('--rows');
const total = rowsArg > 0 ? Number(process.argv[rowsArg + 1]) : 2000;
const ROW_GROUP = 250;
const dir = mkdtempSync(join(tmpdir(), 'probe-bench-trajectory-dataset-'));

/** Text that does not compress away (hex digests of a counter): a log line per test. */
function log(seed: number, bytes: number): string {
  let out = '';
  for (let i = 0; out.length < bytes; i++)
    out += `test_${createHash('sha1').update(`${seed}:${i}`).digest('hex')} ... ${i % 5 ? 'ok' : 'FAIL'}\n`;
  return out;
}

function writeDataset(file: string, n: number): void {
  const turn = (role: string, text: string) => ({ role, text, system_prompt: null, mask: false, cutoff_date: null });
  const trajectory = (i: number) => [
    turn('system', 'SETTING: You are an autonomous programmer.'),
    turn(
      'user',
      `ISSUE:\nBug ${i}: division has no colon.\n\nINSTRUCTIONS:\nFix it.\n(Open file: n/a)\n(Current directory: /repo)\nbash-$`,
    ),
    ...Array.from({ length: 10 }, (_, k) => [
      turn('ai', `Step ${k}: look at the file.\n\`\`\`\nopen tests/missing_colon.py ${k + 1}\n\`\`\``),
      turn('user', `${log(i * 31 + k, 1500)}(Open file: /repo/tests/missing_colon.py)\n(Current directory: /repo)\nbash-$`),
    ]).flat(),
    turn('ai', 'Done.\n```\nsubmit\n```'),
  ];
  const rows = Array.from({ length: n }, (_, i) => ({
    instance_id: `repo__pkg-${i}`,
    target: i % 2 === 0,
    eval_logs: log(i, 40_000),
    trajectory: trajectory(i),
  }));
  const string = (name: string) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
  const turnFields = ['cutoff_date', 'mask', 'role', 'system_prompt', 'text'];
  parquetWriteFile({
    filename: file,
    rowGroupSize: ROW_GROUP,
    columnData: ['instance_id', 'target', 'eval_logs', 'trajectory'].map((name) => ({
      name,
      data: rows.map((r) => r[name as keyof typeof r]),
    })),
    schema: [
      { name: 'root', num_children: 4 },
      string('instance_id'),
      { name: 'target', type: 'BOOLEAN', repetition_type: 'OPTIONAL' },
      string('eval_logs'),
      { name: 'trajectory', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', repetition_type: 'OPTIONAL', num_children: turnFields.length },
      ...turnFields.map((name) => (name === 'mask' ? { name, type: 'BOOLEAN', repetition_type: 'OPTIONAL' } : string(name))),
    ],
  } as Parameters<typeof parquetWriteFile>[0]);
}

/** A V8 heap this small holds a row group, not a dataset: a reader that keeps rows runs out. */
const SMALL_HEAP_MB = 64;

function child(file: string, mode: string, heapMb?: number): { rows: number; steps: number; ms: number; peakRssMb: number } {
  const flags = heapMb ? [`--max-old-space-size=${heapMb}`] : [];
  const r = spawnSync(
    process.execPath,
    [...flags, '--import', 'tsx', join(import.meta.dirname, 'trajectory-dataset-child.ts'), file, mode],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0)
    throw new Error(`${mode}${heapMb ? ` in a ${heapMb} MiB heap` : ''}: ${r.stderr.trim().split('\n').slice(-3).join(' / ')}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { rows: number; steps: number; ms: number; peakRssMb: number };
}

try {
  for (const n of [total / 4, total]) {
    const file = join(dir, `dataset-${n}.parquet`);
    writeDataset(file, n);
    const mb = statSync(file).size / 2 ** 20;
    const base = child(file, 'baseline');
    const stream = child(file, 'stream');
    const whole = child(file, 'whole');
    const above = (r: { peakRssMb: number }) => r.peakRssMb - base.peakRssMb;
    console.log(`${n} rows, ${mb.toFixed(0)} MiB file (${ROW_GROUP}-row groups): bare process ${base.peakRssMb.toFixed(0)} MiB peak`);
    console.log(
      `  stream (probe build): +${above(stream).toFixed(0)} MiB peak = ${(above(stream) / mb).toFixed(2)} × file, ${stream.rows} rows, ${stream.steps} steps imported, ${(stream.ms / 1000).toFixed(1)} s`,
    );
    console.log(
      `  whole (every column): +${above(whole).toFixed(0)} MiB peak = ${(above(whole) / mb).toFixed(2)} × file, ${(whole.ms / 1000).toFixed(1)} s`,
    );
    const fits = (mode: string) => {
      try {
        return `${child(file, mode, SMALL_HEAP_MB).rows} rows`;
      } catch (error) {
        return `fails (${(error as Error).message.slice(0, 80)})`;
      }
    };
    console.log(`  in a ${SMALL_HEAP_MB} MiB V8 heap: stream ${fits('stream')}; whole ${fits('whole')}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
