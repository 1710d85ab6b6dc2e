/**
 * `probe validate`: the validation study in one command — every rung (general code BPB,
 * Decisive-Action BPB, Patch MCQ, prefix pass@K) and ASAP on every checkpoint, each probe
 * against each of ASAP's ground truths (pass@k and graded behaviour) with Spearman,
 * Kendall and bootstrap intervals, the ranking each would give, and what each rung cost.
 */
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { CONTEXT_FORMATS, type ContextFormat } from '../replay/render-context.ts';
import { loadTasks } from '../verify/load-task.ts';
import { printStudy } from '../validate/table.ts';
import { runStudy, STUDY_DEFAULTS, studyConfig, type StudySettings } from '../validate/run.ts';
import { studyProbeSet } from '../validate/probe-set.ts';
import { positiveInteger } from './args.ts';
import { addRungOptions, type RungFlags, rungSettings } from './rung-options.ts';
import { addScoringOptions, emitResults, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { timestampedRunDir } from '../pipeline/open-run.ts';
import { checkResume } from './run-options.ts';

interface ValidateFlags extends ScoringFlags, Omit<RungFlags, 'reference'> {
  trajectories?: string;
  context: ContextFormat[];
  reference?: string;
  code: string;
  resamples: number;
  includeControls?: boolean;
}

export function validateCommand(): Command {
  return addScoringOptions(
    addRungOptions(
      new Command('validate')
        .description(
          'The validation study: every rung and ASAP on every checkpoint; each probe against ASAP pass@k and behaviour (Spearman, Kendall, bootstrap intervals), rankings and costs.',
        )
        .option('--trajectories <dir|file>', 'build the probe set from these trajectories into the run directory (instead of --probes)')
        .addOption(
          new Option('--context <formats...>', 'with --trajectories: how probe contexts are rendered')
            .choices([...CONTEXT_FORMATS])
            .default(['asap']),
        ),
      [
        'tasks',
        [
          'reference',
          {
            help: 'reference trajectories for the ASAP prefixes (default: --trajectories, else the demo trajectories)',
            default: undefined,
          },
        ],
        'code',
        'n',
        ['seed', { help: 'sampling and bootstrap seed (a whole number)' }],
        'passkMaxTokens',
        ['asapRuns', { help: 'ASAP episodes per instance for every checkpoint (0: no ground truth)', default: STUDY_DEFAULTS.asapRuns }],
        'asapMaxSteps',
        'asapMaxTokens',
        'asapInstances',
        'asapProfile',
        'concurrency',
      ],
    )
      .option('--resamples <n>', 'bootstrap resamples', positiveInteger, STUDY_DEFAULTS.resamples)
      .option(
        '--include-controls',
        'correlate controls too (config.json probe_ladder.control: checkpoints that have seen the probes; by default shown, not correlated)',
      ),
  )
    .addHelpText(
      'after',
      '\nExamples:\n  probe validate --ckpt ckpts/* --trajectories heldout/trajectories --tasks heldout/tasks --code heldout/tasks --asap-runs 4 --out runs/validate\n  probe validate --out runs/validate --resume ...same flags   # continues where it stopped',
    )
    .action(async (flags: ValidateFlags) => {
      checkResume(flags);
      if (flags.trajectories && flags.probes)
        throw new InputError({ file: '--probes' }, 'give --probes (a built probe set) or --trajectories (build one), not both');
      const out = flags.out ?? timestampedRunDir('validate');
      const tasks = await loadTasks(flags.tasks);
      const reference = flags.reference ?? flags.trajectories ?? join(REPO_ROOT, 'trajectories');
      const settings: StudySettings = {
        ...rungSettings({ ...flags, reference }, tasks),
        code: flags.code,
        resamples: flags.resamples,
        includeControls: flags.includeControls,
      };
      let probes = flags.probes;
      if (flags.trajectories) {
        probes = await studyProbeSet(out, {
          trajectories: flags.trajectories,
          tasks,
          tasksPath: flags.tasks,
          contexts: flags.context,
          resume: Boolean(flags.resume),
          quiet: Boolean(flags.json),
        });
      }
      const run = prepareScoringRun({ ...flags, out, probes }, 'validate', {
        config: studyConfig(settings),
        seeds: { sampling: flags.seed, bootstrap: flags.seed },
        scores: true,
      });
      const study = await runStudy({ ...run, dir: run.dir! }, settings); // --out always set above
      const errors = reportFailures(study.failures);
      if (!run.quiet) printStudy(study, (text) => process.stderr.write(text));
      const { failures: _reported, rows, ...rest } = study;
      emitResults(run, { results: rows, probes_file: probes ?? null, ...rest, ...errors });
    });
}
