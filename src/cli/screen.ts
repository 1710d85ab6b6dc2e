/**
 * `probe screen`: the ladder in one command — BPB and MCQ for every checkpoint, pass@K for
 * the best by combined rank, a shortlist by pass@1, and ASAP episodes for the shortlist.
 */
import { dirname } from 'node:path';
import { Command, Option } from 'commander';
import { InputError } from '../errors.ts';
import { type LadderStage, runLadderJob } from '../pipeline/ladder-stages.ts';
import { readStageJobInput } from '../pipeline/stage-job.ts';
import { addSlurmOptions, type SlurmFlags, slurmSettings } from './slurm-options.ts';
import { EMBEDDED_SAMPLING_PROBES } from '../embedded.ts';
import { addLadderEnvironmentOptions, environmentOptionValues } from './asap-environment.ts';
import { loadTasks } from '../verify/load-task.ts';
import { positiveInteger } from './args.ts';
import { addRungOptions, type RungFlags, rungSettings } from './rung-options.ts';
import { addScoringOptions, emitResults, INCLUDE_CONTROLS_HELP, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { LADDER_DEFAULTS, ladderConfig, runLadder, SCREEN_STAGES, type LadderSettings } from '../pipeline/ladder.ts';
import { withRunStages } from '../report/run-stages.ts';
import { printLadder } from '../report/ladder-table.ts';
import { addImageSourceOptions, type ImageSourceFlags, imageSources } from './image-source-options.ts';

interface ScreenFlags extends ScoringFlags, ImageSourceFlags, RungFlags, SlurmFlags {
  shortlist: number;
  passkTop?: number;
  asapOut?: string;
  includeControls?: boolean;
  asapEnv: string[];
  job?: string;
  jobStage?: LadderStage;
}

/** What `--slurm` needs of a screen, refused before any run directory is made. */
function checkSlurmScreen(flags: ScreenFlags): void {
  if (!flags.slurm) return;
  // The jobs write under the screen's run directory, and a rerun resumes from it: it must be one the nodes share.
  if (!flags.out)
    throw new InputError(
      { file: '--out' },
      '--slurm needs --out DIR: the run directory the jobs write under (on a file system the compute nodes share)',
    );
  const other = flags.asapEnv.find((env) => env !== 'swe');
  // Terminal-Bench and deep-research episodes run in this process only (their sandboxes and corpora are not set up in a job yet).
  if (other)
    throw new InputError(
      { file: '--asap-env' },
      `${other}: not with --slurm (only swe's ASAP episodes run as Slurm jobs); drop it or run without --slurm`,
    );
}

export function screenCommand(): Command {
  return addScoringOptions(
    addLadderEnvironmentOptions(
      addRungOptions(
        addRungOptions(
          addSlurmOptions(addImageSourceOptions(new Command('screen')), "score each checkpoint's stages")
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
      ),
    ).option('--include-controls', INCLUDE_CONTROLS_HELP),
  )
    .addOption(new Option('--job <file>', 'run as a Slurm job of a screen: the checkpoint it was given').hideHelp())
    .addOption(new Option('--job-stage <stage>').choices(['cheap', 'passk', 'asap']).hideHelp())
    .addHelpText('after', '\nExample:\n  probe screen --probes probes/demo.jsonl --shortlist 2 --out runs/screen-demo')
    .action(async (flags: ScreenFlags) => {
      const settings: LadderSettings = {
        ...rungSettings(flags, await loadTasks(flags.tasks)),
        shortlist: flags.shortlist,
        passkTop: flags.passkTop,
        asapOut: flags.asapOut,
        includeControls: flags.includeControls,
        asapEnvs: flags.asapEnv,
        environmentOptions: environmentOptionValues(flags),
        imageSources: imageSources(flags),
        slurm: slurmSettings(flags),
      };
      const prepare = (f: ScreenFlags) =>
        prepareScoringRun(f, 'screen', {
          config: ladderConfig(settings),
          seeds: { sampling: flags.seed },
          scores: true,
          defaultProbes: EMBEDDED_SAMPLING_PROBES,
        });
      if (flags.job) {
        // A Slurm job of a screen: its one checkpoint's stage, into the run directory beside its job file.
        const { checkpoint } = readStageJobInput(flags.job);
        const run = prepare({ ...flags, ckpt: [checkpoint], out: dirname(flags.job), resume: true });
        const job = await runLadderJob({ ...run, dir: run.dir! }, settings, flags.jobStage ?? 'cheap');
        if (job.failure) process.exitCode = job.failure.exit_code;
        return;
      }
      checkSlurmScreen(flags);
      const run = prepare(flags);
      // One progress display for the rungs, with the ETA of the whole screen (shares as the demo's, without its build).
      const outcome = await withRunStages(SCREEN_STAGES, () => runLadder(run, settings));
      const errors = reportFailures(outcome.failures);
      if (!run.quiet) printLadder(outcome, run.items.length, flags.n);
      emitResults(run, { results: outcome.rows, shortlist: outcome.shortlist, asap_out: outcome.asapOut, ...errors });
    });
}
