/**
 * `probe demo`: the whole ladder on what ships in the repository — build the probes from
 * the demo trajectories, BPB and MCQ for every embedded checkpoint, pass@K for the best,
 * ASAP episodes for the shortlist — then the ranking table and an HTML report.
 */
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Command, Option } from 'commander';
import { REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { collectRuns } from '../report/collect.ts';
import { renderReport } from '../report/html.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { openSandbox } from '../sandbox/open.ts';
import { loadTasks } from '../verify/load-task.ts';
import { ensureRequirements } from '../setup/requirements.ts';
import { positiveInteger, positiveNumber } from './args.ts';
import { buildProbeSet, trajectoriesHash, writeProbeItems, type TrajectoryBuild } from '../pipeline/build.ts';
import { existingRunError } from '../store/run-dir.ts';
import { lockRunDir } from '../store/run-lock.ts';
import { ensureOutputDir } from '../store/output-path.ts';
import { TrajectoryBuildSchema } from '../schema/build-progress.ts';
import { UnitLog } from '../store/unit-log.ts';
import { INCLUDE_CONTROLS_HELP, prepareScoringRun, reportFailures, timestampedRunDir, type ScoringFlags } from './scoring-options.ts';
import { LADDER_DEFAULTS, ladderConfig, passkItemsOf, runLadder, SCREEN_STAGES, type LadderSettings } from '../pipeline/ladder.ts';
import { printLadder } from '../report/ladder-table.ts';
import { currentRun, enterStage, withRunStages } from '../report/run-stages.ts';
import { formatDuration } from '../report/progress.ts';
import { ASAP_ENVIRONMENTS, type AsapEnvironment } from '../protocol.ts';
import { addRunOptions, checkResume, resultCache, type RunFlags } from './run-options.ts';
import { buildCacheKey, readCachedBuild, writeCachedBuild } from '../pipeline/build-cache.ts';
import type { ContextFormat } from '../replay/render-context.ts';

interface DemoFlags extends RunFlags {
  json?: boolean;
  install: boolean;
  n: number;
  asapRuns: number;
  asapMaxSteps: number;
  passkMaxTokens: number;
  passkGoldMargin: number;
  asapMaxTokens: number;
  asapInstances: number;
  shortlist: number;
  concurrency: number;
  includeControls?: boolean;
  asapEnv: AsapEnvironment[];
  passkRenderings: 'one' | 'all';
}

const TRAJECTORIES = join(REPO_ROOT, 'trajectories');
const TASKS = join(REPO_ROOT, 'verifiers');

/**
 * The demo's budgets, said beside its table: each is smaller than a screen's default, and the
 * reader should know which and why (docs/benchmarks.md measures the larger ones).
 * `asapInstances`: those ASAP ran on (the leak check may exclude some of the first --asap-instances).
 */
function budgetsLine(flags: DemoFlags, items: number, passkItems: number, asapInstances: number): string {
  const renderings =
    passkItems < items
      ? `on one rendering of each trajectory (${passkItems} of ${items} items; its renderings share one decisive action)`
      : `on all ${items} items`;
  return (
    `Budgets: pass@${flags.n} ${renderings}, sampled actions ≤ ${flags.passkGoldMargin} × the longest gold action in each checkpoint's own tokens, at most ${flags.passkMaxTokens}; ` +
    `ASAP ${flags.asapRuns} runs × ${asapInstances} instances, ≤ ${flags.asapMaxSteps} steps of ≤ ${flags.asapMaxTokens} tokens. ` +
    'With every rendering the ranking and the recommendation are the same (docs/benchmarks.md).'
  );
}

export function demoCommand(): Command {
  return addRunOptions(
    new Command('demo')
      .description(
        'The whole ladder on the embedded checkpoints and demo suite: build probes, BPB, MCQ, pass@K, ASAP for the shortlist; ends with the ranking and an HTML report.',
      )
      .option('--shortlist <n>', 'checkpoints that get ASAP episodes', positiveInteger, LADDER_DEFAULTS.shortlist)
      .option('-n, --n <n>', 'pass@K samples per item', positiveInteger, LADDER_DEFAULTS.n)
      .option('--asap-runs <n>', 'ASAP episodes per instance', positiveInteger, LADDER_DEFAULTS.asapRuns)
      .option('--asap-max-steps <n>', 'model steps per ASAP episode', positiveInteger, LADDER_DEFAULTS.asapMaxSteps)
      // The demo's longest gold action is 592 tokens to a byte-level checkpoint: 640 leaves every gold room, and keeps rambling samples from costing minutes.
      .option('--passk-max-tokens <n>', 'tokens per sampled action in pass@K, at most', positiveInteger, 640)
      // The same gold text is 592 tokens to a byte-level checkpoint and 232 to a BPE rung: a limit per checkpoint, in its own tokens.
      .option(
        '--passk-gold-margin <x>',
        "pass@K's token limit on each checkpoint: this multiple of the longest gold action in its own tokens",
        positiveNumber,
        1.25,
      )
      .option('--asap-max-tokens <n>', 'new tokens per ASAP step', positiveInteger, 1024)
      .option('--asap-instances <n>', 'instances that get ASAP episodes', positiveInteger, 6)
      .option('--concurrency <n>', 'ASAP episodes at once', positiveInteger, LADDER_DEFAULTS.concurrency)
      .addOption(
        new Option(
          '--asap-env <kind...>',
          "environment kinds of the shortlist's ASAP episodes, side by side: swe, terminal (Docker), research",
        )
          .choices([...ASAP_ENVIRONMENTS])
          .default(['swe']),
      )
      .addOption(
        new Option(
          '--passk-renderings <which>',
          "pass@K on one rendering of each trajectory (its native one) or on every rendering; a trajectory's renderings share its decisive action",
        )
          .choices(['one', 'all'])
          .default('one'),
      )
      .option('--include-controls', INCLUDE_CONTROLS_HELP)
      .option('--no-install', 'do not install missing system packages (bubblewrap, python3-pytest, git) even as root')
      .option('--json', 'print one JSON document on stdout'),
    'run directory (default: runs/demo-<time>)',
  )
    .addHelpText(
      'after',
      '\nExample:\n  probe demo            # under 5 minutes on 2 CPU cores, under 1 with a warm cache (installs bubblewrap and pytest first on a bare machine, as root)\n  probe demo --out runs/demo --resume',
    )
    .action((flags: DemoFlags) => withRunStages(DEMO_STAGES, () => runDemo(flags)));
}

/**
 * The demo's stages and their shares of its time on a cold cache (measured: docs/benchmarks.md),
 * for the one progress display and its ETA over the whole run.
 */
const DEMO_STAGES = [{ name: 'build', share: 0.2 }, ...SCREEN_STAGES];

async function runDemo(flags: DemoFlags): Promise<void> {
  const started = Date.now();
  checkResume(flags);
  const out = flags.out ?? timestampedRunDir('demo');
  const quiet = Boolean(flags.json);
  const say = (text: string) => {
    if (!quiet) process.stderr.write(text);
  };
  // A bare machine has no bubblewrap or pytest yet: as root, install them (saying so) before any work.
  ensureRequirements({ install: flags.install, log: (line) => process.stderr.write(line) });
  const tasks = await loadTasks(TASKS);
  const probesFile = join(out, 'probes.jsonl');
  ensureOutputDir(out, '--out');
  lockRunDir(out); // from the build on: one demo writes this directory at a time

  // 1. The probe set, built once per run directory (a resumed demo keeps the one it built).
  // With the cache on, a set built before from the same trajectories, tasks, settings and probe code is read back (build-cache.ts).
  const cache = resultCache(flags);
  const build = { contexts: ['native', 'asap'] as ContextFormat[], restore: 'patch' as const, distractors: true, repeats: 3 };
  /** Replays the demo trajectories into `probesFile` (resuming from its progress log), and keeps the set in the cache under `buildKey`. */
  const buildDemoProbes = async (buildKey: string | undefined) => {
    say(`Building probes from ${relative(process.cwd(), TRAJECTORIES) || TRAJECTORIES} (replaying each trajectory in a jailed sandbox)\n`);
    const progressLog = UnitLog.open<TrajectoryBuild>(
      join(out, 'build.progress.jsonl'),
      { trajectories: trajectoriesHash(TRAJECTORIES) },
      { resume: Boolean(flags.resume), what: 'probe build', units: TrajectoryBuildSchema },
    );
    const built = await buildProbeSet({
      trajectories: TRAJECTORIES,
      tasks,
      contexts: build.contexts,
      restore: build.restore,
      distractors: build.distractors,
      replay: { openSandbox: (t) => openSandbox('local', t), sandboxName: 'local', concurrency: 4, repeats: build.repeats },
      quiet,
      memo: progressLog,
    });
    if (built.inputErrors) throw new InputError({ file: TRAJECTORIES }, `${built.inputErrors} demo trajectories could not be read`);
    writeProbeItems(probesFile, built.items);
    if (cache && buildKey) writeCachedBuild(cache.dir, buildKey, probesFile);
    progressLog.remove();
    say(`${built.items.length} probe items from ${built.trajectories.filter((t) => !t.rejected).length} trajectories → ${probesFile}\n`);
  };
  if (!existsSync(probesFile)) {
    if (existsSync(join(out, 'run.json')) && !flags.resume) throw existingRunError(join(out, 'run.json'));
    enterStage('build');
    const buildKey = cache ? buildCacheKey({ trajectories: TRAJECTORIES, tasksDir: TASKS, settings: build }) : undefined;
    if (cache && buildKey && readCachedBuild(cache.dir, buildKey, probesFile))
      say(
        `Probes: the set built before from these trajectories, tasks and probe source, read from the cache in ${cache.dir} (--no-cache builds it again)\n`,
      );
    else await buildDemoProbes(buildKey);
  }

  // 2. The ladder, into the same run directory.
  const settings: LadderSettings = {
    shortlist: flags.shortlist,
    n: flags.n,
    seed: 0,
    tasks,
    tasksPath: TASKS,
    reference: TRAJECTORIES,
    asapRuns: flags.asapRuns,
    asapMaxSteps: flags.asapMaxSteps,
    passkMaxTokens: flags.passkMaxTokens,
    passkGoldMargin: flags.passkGoldMargin,
    asapMaxTokens: flags.asapMaxTokens,
    asapInstances: flags.asapInstances,
    concurrency: flags.concurrency,
    includeControls: flags.includeControls,
    asapEnvs: flags.asapEnv,
    passkOnePerTrajectory: flags.passkRenderings === 'one',
  };
  const scoring: ScoringFlags = { ...flags, out, probes: probesFile };
  const run = prepareScoringRun(scoring, 'demo', { config: ladderConfig(settings), seeds: { sampling: 0 } });
  const outcome = await runLadder(run, settings);
  const errors = reportFailures(outcome.failures);
  run.dir!.writeResults({ results: outcome.rows, shortlist: outcome.shortlist, asap_out: outcome.asapOut, ...errors });

  // 3. The report.
  const html = join(out, 'report.html');
  enterStage('report');
  writeFileAtomic(html, renderReport(collectRuns([out]), { title: 'probe demo: the embedded checkpoint ladder' }));
  const stages = currentRun()?.timings() ?? [];
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  if (quiet) {
    process.stdout.write(
      `${JSON.stringify({ out, report: html, minutes: Number(minutes), stages, results: outcome.rows, shortlist: outcome.shortlist, ...errors }, null, 2)}\n`,
    );
    return;
  }
  printLadder(outcome, run.items.length, flags.n);
  say(`${budgetsLine(flags, run.items.length, passkItemsOf(run.items, settings).length, outcome.asapInstances ?? 0)}\n`);
  say(
    `\nHTML report: ${html}\nRun directory: ${out} (${minutes} min: ${stages.map((t) => `${t.stage} ${formatDuration(t.seconds * 1000)}`).join(', ')})\n`,
  );
}
