/**
 * `probe watch DIR…`: scores each checkpoint a trainer writes under DIR as it lands — the
 * cheap rungs on every one, pass@K and ASAP on some — into one resumable run directory,
 * with the trend of each probe against training step (results.json, trend.svg; `probe
 * report` draws it). Runs until stopped; `--once` scores what is complete and exits.
 */
import { basename, dirname, join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { EMBEDDED_SAMPLING_PROBES } from '../embedded.ts';
import { loadProbeItems } from '../probes/load.ts';
import { loadTasks } from '../verify/load-task.ts';
import { checkWatched } from '../watch/discover.ts';
import { readReadyDir } from '../watch/ready.ts';
import { parseFound } from '../watch/found.ts';
import type { JobStage } from '../watch/job-book.ts';
import { runWatch, runWatchJob, WATCH_DEFAULTS, watchConfig, type WatchSettings } from '../watch/run.ts';
import { nonNegativeInteger, nonNegativeNumber, positiveInteger } from './args.ts';
import { addRungOptions, type RungFlags, rungSettings } from './rung-options.ts';
import { addSlurmOptions, type SlurmFlags, slurmSettings } from './slurm-options.ts';
import { addBosOption, type BosFlags } from './bos-option.ts';
import { addCheckpointOptions, type CheckpointFlags } from './checkpoint-options.ts';
import { addHttpOptions, httpOptions, type HttpFlags } from './http-options.ts';
import { resultCache } from './run-options.ts';
import { bosConfig } from '../backends/bos.ts';
import { checkpointConfig, servedAs } from '../pipeline/checkpoint-loop.ts';
import { openRunDir } from '../pipeline/open-run.ts';
import { InputError } from '../errors.ts';

interface WatchFlags extends HttpFlags, BosFlags, CheckpointFlags, RungFlags, SlurmFlags {
  out?: string;
  cache?: string | boolean;
  probes?: string;
  limit?: number;
  json?: boolean;
  once?: boolean;
  marker?: string;
  readyDir?: string;
  job?: string;
  jobStage?: JobStage;
  settle: number;
  poll: number;
  every: number;
  move: string;
  code: string;
  tensorboard?: string;
}

/** `--move`: bits per byte, or `off`. */
function moveThreshold(value: string): number {
  if (value === 'off') return Number.POSITIVE_INFINITY;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new InputError({ file: '--move' }, `expected bits per byte > 0, or off; got ${JSON.stringify(value)}`);
  return n;
}

/** A marker is a file name, not a path: it is looked for inside (or beside) each checkpoint. */
function markerName(value: string): string {
  if (!value || value.includes('/') || value === '.' || value === '..')
    throw new InputError({ file: '--marker' }, `a file name (no /), got ${JSON.stringify(value)}`);
  return value;
}

export function watchCommand(): Command {
  return addBosOption(
    addHttpOptions(
      addCheckpointOptions(
        addRungOptions(
          addSlurmOptions(
            new Command('watch')
              .description(
                'Score each checkpoint a training run writes under DIR as it lands (cheap rungs on all, pass@K and ASAP on some) into one resumable run directory, and draw each probe against training step.',
              )
              .argument(
                '[dir...]',
                'directories a trainer writes checkpoints into: checkpoint directories, .gguf files, or .url files holding a server address (optional with --ready-dir)',
              )
              .option('--out <dir>', 'the run directory (a rerun with the same settings resumes it); default: runs/watch-<first DIR>')
              .option('--once', 'score what is complete now and exit (for a cron job or the CI of a training run)')
              .option(
                '--marker <file>',
                'a checkpoint is complete once this file exists in it (beside a file checkpoint: <file>.<marker>)',
                markerName,
              )
              .addOption(
                new Option(
                  '--ready-dir <dir>',
                  'a checkpoint is complete once the trainer announces it here: <run>/step-<n>.ready.json (OLMo-core\'s; its "path" may be anywhere) or <name>.ready',
                ).conflicts('marker'),
              )
              .option(
                '--settle <s>',
                'without --marker: complete once nothing in it changed for this long',
                nonNegativeNumber,
                WATCH_DEFAULTS.settleS,
              )
              .option('--poll <s>', 'seconds between looks at the directories', nonNegativeNumber, WATCH_DEFAULTS.pollS)
              .option(
                '--every <k>',
                'pass@K and ASAP on the first checkpoint of a training run and every k-th after it (0: by --move only)',
                nonNegativeInteger,
                WATCH_DEFAULTS.every,
              )
              .option(
                '--move <bits>',
                'and on any whose Decisive-Action BPB moved this far since the last that got them (off: by --every only)',
                String(WATCH_DEFAULTS.move),
              )
              .option(
                '--probes <file|dir>',
                'probe items (.jsonl file or a directory of them); default: the shipped demo probes (probes/demo.jsonl)',
              )
              .option('--limit <n>', 'use only the first N probe items', positiveInteger)
              .option(
                '--tensorboard <dir>',
                'also write the trend as TensorBoard scalars: one run per training run under DIR, tags probe/<probe>[/low|/high] by training step',
              )
              .addOption(new Option('--job <file>', 'run as a Slurm job of a watch: the checkpoint it was given').hideHelp())
              .addOption(new Option('--job-stage <stage>').choices(['cheap', 'heavy']).hideHelp()),
            'score each checkpoint',
          ),
          [
            ['code', { help: 'plain held-out code for general code BPB, the baseline' }],
            'tasks',
            'reference',
            ['n', { help: 'pass@K samples per item (0: no pass@K)', parse: nonNegativeInteger }],
            'seed',
            'passkMaxTokens',
            ['asapRuns', { help: 'ASAP episodes per instance (0: no ASAP)' }],
            'asapMaxSteps',
            'asapMaxTokens',
            'asapInstances',
            'asapProfile',
            'concurrency',
          ],
        )
          .option('--cache <dir>', 'cache of deterministic backend calls; default: $PROBE_CACHE_DIR or ~/.cache/probe')
          .option('--no-cache', 'compute every backend call afresh')
          .option('--json', 'print one JSON document on stdout when the watch ends'),
      ),
    ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  probe watch /ckpts/run-7 --out runs/watch-run-7                 # until stopped; rerun to resume\n  probe watch /ckpts/run-7 --out runs/watch-run-7 --once --marker COMPLETE   # from cron\n  probe report runs/watch-run-7 --html trend.html                 # the trend, any time',
    )
    .action(async (dirs: string[], flags: WatchFlags) => {
      if (dirs.length === 0 && !flags.readyDir) throw new InputError({ file: 'DIR' }, 'name a directory to watch, or --ready-dir');
      checkWatched(dirs); // before a run directory is made for a typo
      if (flags.readyDir) readReadyDir(flags.readyDir);
      const tasks = await loadTasks(flags.tasks);
      const settings: WatchSettings = {
        ...rungSettings(flags, tasks),
        watched: dirs,
        marker: flags.marker,
        readyDir: flags.readyDir,
        settleMs: flags.settle * 1000,
        pollMs: flags.poll * 1000,
        once: Boolean(flags.once),
        rule: { every: flags.every, move: moveThreshold(flags.move) },
        code: flags.code,
        // The job runs this same command (its settings, so its numbers, are the watch's), with --job added.
        slurm: slurmSettings(flags),
        tensorboard: flags.tensorboard,
      };
      const source = flags.probes ?? EMBEDDED_SAMPLING_PROBES;
      let items = loadProbeItems(source);
      if (flags.limit !== undefined) items = items.slice(0, flags.limit);
      const http = httpOptions(flags, [], true); // its checkpoints are not known yet: any may be a server
      const found = flags.job ? parseFound(flags.job) : undefined;
      // A job writes into a run directory of its own, beside the checkpoint it was given.
      const out = flags.job ? dirname(flags.job) : (flags.out ?? join('runs', `watch-${basename(resolve(dirs[0] ?? flags.readyDir!))}`));
      // A watch is continued by running it again: checkpoints are added to run.json as they land.
      const dir = openRunDir(
        out,
        {
          verb: 'watch',
          config: { ...watchConfig(settings), ...servedAs(http), ...bosConfig(flags.bos), ...checkpointConfig(flags) },
          checkpoints: [],
          probeSet: { source, items },
          seeds: { sampling: flags.seed },
        },
        true,
      );
      const quiet = Boolean(flags.json) && !found;
      const run = {
        items,
        http,
        dtype: flags.dtype,
        engine: flags.engine,
        cache: resultCache(flags),
        dir,
        quiet,
        ...(flags.bos ? { bos: flags.bos } : {}),
      };
      const outcome = found ? await runWatchJob(run, settings, found, flags.jobStage ?? 'cheap') : await runWatch(run, settings);
      if (found) {
        if (outcome.failures.length) process.exitCode = Math.max(...outcome.failures.map((f) => f.exit_code));
        return;
      }
      // Bad input (a checkpoint that would not open) is exit 2, a failed server 1; the others' scores are kept.
      if (outcome.failures.length) process.exitCode = Math.max(...outcome.failures.map((f) => f.exit_code));
      if (outcome.unreadable.length) process.exitCode = 2;
      if (quiet)
        process.stdout.write(
          `${JSON.stringify({ out: dir.dir, scored: outcome.scored, trend: outcome.trend, failures: outcome.failures, unreadable: outcome.unreadable }, null, 2)}\n`,
        );
      else process.stderr.write(`\nTrend: ${join(dir.dir, 'trend.svg')} · report: probe report ${dir.dir}\n`);
    });
}
