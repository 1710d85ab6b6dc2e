/**
 * `probe task check --terminal DIR…`: the oracle run over Terminal-Bench task sets
 * (terminal/oracle.ts): every task built and its reference solution graded, one table. A
 * subcommand of `probe task` (which keeps taking `probe task DIR` for a task record).
 */
import { relative } from 'node:path';
import { Command } from 'commander';
import { createProgress } from '../report/progress.ts';
import { imageOriginLines } from '../terminal/image-origins.ts';
import { formatTable } from '../report/table.ts';
import { type OracleRow, oracleRun, oracleTaskDirs } from '../terminal/oracle.ts';
import { positiveInteger } from './args.ts';
import { addImageSourceOptions, type ImageSourceFlags, imageSources } from './image-source-options.ts';

interface CheckFlags extends ImageSourceFlags {
  terminal: string[];
  concurrency: number;
  json?: boolean;
}

/** A reason as the table shows it: paths inside the task relative to it (the row names the task). */
function shortReason(row: OracleRow): string {
  if (row.reason === null) return '';
  return row.reason
    .split(`${row.dir}/`)
    .join('')
    .replaceAll(row.dir, relative(process.cwd(), row.dir) || '.');
}

export function printOracleTable(rows: readonly OracleRow[], write: (text: string) => void): void {
  const headers = ['task', 'resolved', 'reward', 'build s', 'image reused', 'reason'];
  const cells = rows.map((r) => [
    r.task,
    r.resolved ? 'yes' : 'no',
    r.reward === null ? '-' : String(r.reward),
    r.build_seconds === null ? '-' : r.build_seconds.toFixed(1),
    r.image_reused === null ? '-' : r.image_reused ? 'yes' : 'no',
    shortReason(r),
  ]);
  const resolved = rows.filter((r) => r.resolved).length;
  write(`${formatTable(headers, cells, [2, 3])}\n\n${resolved} of ${rows.length} tasks resolved by their reference solution\n`);
  write(imageOriginLines(rows));
}

export function taskCheckCommand(): Command {
  return addImageSourceOptions(
    new Command('check')
      .description(
        "The oracle run over Terminal-Bench task sets: every task's image built, its solution/solve.sh run in a fresh container as the sandbox user within the task's agent timeout, then its tests; one row per task (resolved, reward, reason, build seconds, whether the image was already built). A task that cannot be loaded, or asks what probe cannot give it (sidecar services, several steps, MCP servers…), is a row naming the file and field.",
      )
      .requiredOption('--terminal <dir...>', 'Harbor task directories, or directories of them (each subdirectory holding a task.toml)')
      .option('--concurrency <n>', 'tasks checked at once (each a build, then a container)', positiveInteger, 2)
      .option('--json', 'print the rows as JSON on stdout'),
  )
    .addHelpText(
      'after',
      [
        '',
        'Exit codes: 0 when every task resolved, 1 when any did not (its row says why), 2 for bad usage or input',
        '(a path that is not a directory of tasks) or an environment to fix (no Docker engine, no base image).',
        '',
        'Example (offline: build only from images this engine has, and the Debian stand-in):',
        '  probe task check --terminal path/to/tasks --pull never',
      ].join('\n'),
    )
    .action(async (flags: CheckFlags) => {
      const total = oracleTaskDirs(flags.terminal).length; // bad paths: exit 2 before any work
      const progress = createProgress({ total, enabled: !flags.json });
      let rows: OracleRow[];
      try {
        rows = await oracleRun(flags.terminal, {
          sources: imageSources(flags),
          concurrency: flags.concurrency,
          onPhase: (task, phase) => progress.label(`${task}: ${phase === 'build' ? 'image' : 'solve.sh and tests'}`),
          onRow: () => progress.tick(),
          onPull: (task, line) => progress.label(`${task}: ${line}`),
        });
      } finally {
        progress.stop();
      }
      if (flags.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
      else printOracleTable(rows, (text) => process.stderr.write(text));
      if (rows.some((r) => !r.resolved)) process.exitCode = 1;
    });
}
