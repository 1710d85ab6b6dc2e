/**
 * `probe screen`: the ladder in one command — BPB and MCQ for every checkpoint, pass@K for
 * the best by combined rank, a shortlist by pass@1, and ASAP episodes for the shortlist.
 */
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { EMBEDDED_RESEARCH_SET, EMBEDDED_SAMPLING_PROBES, EMBEDDED_TERMINAL_TASKS, REPO_ROOT } from '../embedded.ts';
import { loadTasks } from '../verify/load-task.ts';
import { integer, nonNegativeInteger, positiveInteger } from './args.ts';
import { addScoringOptions, emitResults, INCLUDE_CONTROLS_HELP, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { LADDER_DEFAULTS, ladderConfig, runLadder, SCREEN_STAGES, type LadderSettings } from '../pipeline/ladder.ts';
import { withRunStages } from '../report/run-stages.ts';
import { printLadder } from '../report/ladder-table.ts';
import { ASAP_ENVIRONMENTS, type AsapEnvironment } from '../protocol.ts';
import { addImageSourceOptions, type ImageSourceFlags, imageSources } from './image-source-options.ts';

interface ScreenFlags extends ScoringFlags, ImageSourceFlags {
  shortlist: number;
  passkTop?: number;
  n: number;
  tasks: string;
  seed: number;
  asapRuns: number;
  asapMaxSteps: number;
  passkMaxTokens: number;
  asapMaxTokens: number;
  asapOut?: string;
  reference: string;
  concurrency: number;
  includeControls?: boolean;
  asapEnv: AsapEnvironment[];
  terminalTasks: string;
  researchSet: string;
}

export function screenCommand(): Command {
  return addScoringOptions(
    addImageSourceOptions(new Command('screen'))
      .description(
        'Run the ladder: BPB and MCQ for all, pass@K for the best, a shortlist for post-training, ASAP episodes for the shortlist.',
      )
      .option('--shortlist <n>', 'checkpoints to recommend', positiveInteger, LADDER_DEFAULTS.shortlist)
      .option('--passk-top <n>', 'checkpoints that get pass@K (default: twice the shortlist)', positiveInteger)
      .option('-n, --n <n>', 'pass@K samples per item', positiveInteger, LADDER_DEFAULTS.n)
      .option('--seed <n>', 'sampling seed (a whole number)', integer, LADDER_DEFAULTS.seed)
      .option('--tasks <dir|file>', "task records of the probes' tasks (and of the ASAP episodes)", join(REPO_ROOT, 'verifiers'))
      .option(
        '--asap-runs <n>',
        'ASAP episodes per instance for each shortlisted checkpoint (0: none)',
        nonNegativeInteger,
        LADDER_DEFAULTS.asapRuns,
      )
      .option('--asap-max-steps <n>', 'model steps per ASAP episode', positiveInteger, LADDER_DEFAULTS.asapMaxSteps)
      .option('--passk-max-tokens <n>', 'tokens per sampled action in pass@K', positiveInteger, LADDER_DEFAULTS.passkMaxTokens)
      .option('--asap-max-tokens <n>', 'new tokens per ASAP step', positiveInteger, LADDER_DEFAULTS.asapMaxTokens)
      .option('--reference <dir>', 'reference trajectories for the ASAP prefixes', join(REPO_ROOT, 'trajectories'))
      .option(
        '--asap-out <dir>',
        'ASAP run directory without --out (a rerun resumes it); default: runs/asap-<settings hash>, or <out>/asap',
      )
      .option('--concurrency <n>', 'ASAP episodes at once', positiveInteger, LADDER_DEFAULTS.concurrency)
      .addOption(
        new Option(
          '--asap-env <kind...>',
          "environment kinds of the shortlist's ASAP episodes, side by side: swe, terminal (Docker), research",
        )
          .choices([...ASAP_ENVIRONMENTS])
          .default(['swe']),
      )
      .option('--terminal-tasks <dir>', 'with --asap-env terminal: Terminal-Bench task directories', EMBEDDED_TERMINAL_TASKS)
      .option('--research-set <dir>', 'with --asap-env research: corpus.jsonl + queries.jsonl', EMBEDDED_RESEARCH_SET)
      .option('--include-controls', INCLUDE_CONTROLS_HELP),
  )
    .addHelpText('after', '\nExample:\n  probe screen --probes probes/demo.jsonl --shortlist 2 --out runs/screen-demo')
    .action(async (flags: ScreenFlags) => {
      const settings: LadderSettings = {
        shortlist: flags.shortlist,
        passkTop: flags.passkTop,
        n: flags.n,
        seed: flags.seed,
        tasks: await loadTasks(flags.tasks),
        tasksPath: flags.tasks,
        reference: flags.reference,
        asapRuns: flags.asapRuns,
        asapMaxSteps: flags.asapMaxSteps,
        passkMaxTokens: flags.passkMaxTokens,
        asapMaxTokens: flags.asapMaxTokens,
        asapOut: flags.asapOut,
        concurrency: flags.concurrency,
        includeControls: flags.includeControls,
        asapEnvs: flags.asapEnv,
        terminalTasks: flags.terminalTasks,
        imageSources: imageSources(flags),
        researchSet: flags.researchSet,
      };
      const run = prepareScoringRun(flags, 'screen', {
        config: ladderConfig(settings),
        seeds: { sampling: flags.seed },
        scores: true,
        defaultProbes: EMBEDDED_SAMPLING_PROBES,
      });
      // One progress display for the rungs, with the ETA of the whole screen (shares as the demo's, without its build).
      const outcome = await withRunStages(SCREEN_STAGES, () => runLadder(run, settings));
      const errors = reportFailures(outcome.failures);
      if (!run.quiet) printLadder(outcome, run.items.length, flags.n);
      emitResults(run, { results: outcome.rows, shortlist: outcome.shortlist, asap_out: outcome.asapOut, ...errors });
    });
}
