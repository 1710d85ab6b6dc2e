/**
 * `probe screen`: the ladder in one command — BPB and MCQ for every checkpoint, pass@K for
 * the best by combined rank, a shortlist by pass@1, and ASAP episodes for the shortlist.
 */
import { Command } from 'commander';
import { EMBEDDED_RESEARCH_SET, EMBEDDED_SAMPLING_PROBES, EMBEDDED_TERMINAL_TASKS } from '../embedded.ts';
import { loadTasks } from '../verify/load-task.ts';
import { positiveInteger } from './args.ts';
import { addRungOptions, type RungFlags, rungSettings } from './rung-options.ts';
import { addScoringOptions, emitResults, INCLUDE_CONTROLS_HELP, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { LADDER_DEFAULTS, ladderConfig, runLadder, SCREEN_STAGES, type LadderSettings } from '../pipeline/ladder.ts';
import { withRunStages } from '../report/run-stages.ts';
import { printLadder } from '../report/ladder-table.ts';
import type { AsapEnvironment } from '../protocol.ts';
import { addImageSourceOptions, type ImageSourceFlags, imageSources } from './image-source-options.ts';

interface ScreenFlags extends ScoringFlags, ImageSourceFlags, RungFlags {
  shortlist: number;
  passkTop?: number;
  asapOut?: string;
  includeControls?: boolean;
  asapEnv: AsapEnvironment[];
  terminalTasks: string;
  researchSet: string;
}

export function screenCommand(): Command {
  return addScoringOptions(
    addRungOptions(
      addRungOptions(
        addImageSourceOptions(new Command('screen'))
          .description(
            'Run the ladder: BPB and MCQ for all, pass@K for the best, a shortlist for post-training, ASAP episodes for the shortlist.',
          )
          .option('--shortlist <n>', 'checkpoints to recommend', positiveInteger, LADDER_DEFAULTS.shortlist)
          .option('--passk-top <n>', 'checkpoints that get pass@K (default: twice the shortlist)', positiveInteger),
        [
          'n',
          'seed',
          'tasks',
          ['asapRuns', { help: 'ASAP episodes per instance for each shortlisted checkpoint (0: none)' }],
          'asapMaxSteps',
          'passkMaxTokens',
          'asapMaxTokens',
          'reference',
        ],
      ).option(
        '--asap-out <dir>',
        'ASAP run directory without --out (a rerun resumes it); default: runs/asap-<settings hash>, or <out>/asap',
      ),
      ['concurrency', 'asapEnv'],
    )
      .option('--terminal-tasks <dir>', 'with --asap-env terminal: Terminal-Bench task directories', EMBEDDED_TERMINAL_TASKS)
      .option('--research-set <dir>', 'with --asap-env research: corpus.jsonl + queries.jsonl', EMBEDDED_RESEARCH_SET)
      .option('--include-controls', INCLUDE_CONTROLS_HELP),
  )
    .addHelpText('after', '\nExample:\n  probe screen --probes probes/demo.jsonl --shortlist 2 --out runs/screen-demo')
    .action(async (flags: ScreenFlags) => {
      const settings: LadderSettings = {
        ...rungSettings(flags, await loadTasks(flags.tasks)),
        shortlist: flags.shortlist,
        passkTop: flags.passkTop,
        asapOut: flags.asapOut,
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
