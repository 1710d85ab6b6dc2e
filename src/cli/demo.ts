/**
 * `probe demo`: the whole ladder on what ships in the repository — build the probes from
 * the demo trajectories, BPB and MCQ for every embedded checkpoint, pass@K for the best,
 * ASAP episodes for the shortlist — then the ranking table and an HTML report.
 */
import { Command, Option } from 'commander';
import { positiveInteger, positiveNumber } from './args.ts';
import { addRungOptions, type RungFlags } from './rung-options.ts';
import { INCLUDE_CONTROLS_HELP } from './scoring-options.ts';
import { LADDER_DEFAULTS } from '../pipeline/ladder.ts';
import { type DemoOutcome, runDemo } from '../pipeline/demo.ts';
import { printLadder } from '../report/ladder-table.ts';
import { formatDuration } from '../report/progress.ts';
import { addRunOptions, checkResume, resultCache, type RunFlags } from './run-options.ts';
import { httpOptions } from './http-options.ts';

interface DemoFlags extends RunFlags, Omit<RungFlags, 'tasks' | 'reference' | 'seed'> {
  json?: boolean;
  install: boolean;
  passkGoldMargin: number;
  asapInstances: number;
  shortlist: number;
  includeControls?: boolean;
  asapEnv: string[];
  passkRenderings: 'one' | 'all';
}

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
    addRungOptions(
      addRungOptions(
        new Command('demo')
          .description(
            'The whole ladder on the embedded checkpoints and demo suite: build probes, BPB, MCQ, pass@K, ASAP for the shortlist; ends with the ranking and an HTML report.',
          )
          .option('--shortlist <n>', 'checkpoints that get ASAP episodes', positiveInteger, LADDER_DEFAULTS.shortlist),
        [
          'n',
          ['asapRuns', { parse: positiveInteger }],
          'asapMaxSteps',
          // The demo's longest gold action is 592 tokens to a byte-level checkpoint: 640 leaves every gold room, and keeps rambling samples from costing minutes.
          ['passkMaxTokens', { help: 'tokens per sampled action in pass@K, at most', default: 640 }],
        ],
      )
        // The same gold text is 592 tokens to a byte-level checkpoint and 232 to a BPE rung: a limit per checkpoint, in its own tokens.
        .option(
          '--passk-gold-margin <x>',
          "pass@K's token limit on each checkpoint: this multiple of the longest gold action in its own tokens",
          positiveNumber,
          1.25,
        ),
      [
        ['asapMaxTokens', { default: 1024 }],
        ['asapInstances', { help: 'instances that get ASAP episodes', default: 6 }],
        'concurrency',
        'asapEnv',
      ],
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
    .action(async (flags: DemoFlags) => {
      checkResume(flags);
      const demo = await runDemo({
        out: flags.out,
        resume: Boolean(flags.resume),
        install: flags.install,
        quiet: Boolean(flags.json),
        cache: resultCache(flags),
        http: httpOptions({}), // the embedded checkpoints run in process: the default request settings
        shortlist: flags.shortlist,
        n: flags.n,
        asapRuns: flags.asapRuns,
        asapMaxSteps: flags.asapMaxSteps,
        passkMaxTokens: flags.passkMaxTokens,
        passkGoldMargin: flags.passkGoldMargin,
        asapMaxTokens: flags.asapMaxTokens,
        asapInstances: flags.asapInstances,
        concurrency: flags.concurrency,
        includeControls: flags.includeControls,
        asapEnvs: flags.asapEnv,
        passkRenderings: flags.passkRenderings,
      });
      printDemo(demo, flags);
    });
}

/** What the demo found: one JSON document with --json, else the ranking, the budgets it ran under and where the report is. */
function printDemo(demo: DemoOutcome, flags: DemoFlags): void {
  const { out, report, minutes, stages, ladder, errors } = demo;
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ out, report, minutes: Number(minutes), stages, results: ladder.rows, shortlist: ladder.shortlist, ...errors }, null, 2)}\n`,
    );
    return;
  }
  printLadder(ladder, demo.items, flags.n);
  process.stderr.write(`${budgetsLine(flags, demo.items, demo.passkItems, ladder.asapInstances ?? 0)}\n`);
  process.stderr.write(
    `\nHTML report: ${report}\nRun directory: ${out} (${minutes} min: ${stages.map((t) => `${t.stage} ${formatDuration(t.seconds * 1000)}`).join(', ')})\n`,
  );
}
