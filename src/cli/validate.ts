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
import { integer, nonNegativeInteger, positiveInteger } from './args.ts';
import { addScoringOptions, emitResults, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { TOOL_PROFILES, type ToolProfile } from '../swe/profiles.ts';
import { checkResume } from './run-options.ts';
import { timestampedRunDir } from '../pipeline/open-run.ts';

interface ValidateFlags extends ScoringFlags {
  trajectories?: string;
  context: ContextFormat[];
  tasks: string;
  reference?: string;
  code: string;
  n: number;
  seed: number;
  passkMaxTokens: number;
  asapRuns: number;
  asapMaxSteps: number;
  asapMaxTokens: number;
  asapInstances?: number;
  asapProfile: ToolProfile;
  concurrency: number;
  resamples: number;
  includeControls?: boolean;
}

/** Plain code none of the embedded checkpoints was counted from: the demo tasks' repositories. */
const EMBEDDED_CODE = join(REPO_ROOT, 'verifiers');

export function validateCommand(): Command {
  return addScoringOptions(
    new Command('validate')
      .description(
        'The validation study: every rung and ASAP on every checkpoint; each probe against ASAP pass@k and behaviour (Spearman, Kendall, bootstrap intervals), rankings and costs.',
      )
      .option('--trajectories <dir|file>', 'build the probe set from these trajectories into the run directory (instead of --probes)')
      .addOption(
        new Option('--context <formats...>', 'with --trajectories: how probe contexts are rendered')
          .choices([...CONTEXT_FORMATS])
          .default(['asap']),
      )
      .option('--tasks <dir|file>', "task records of the probes' tasks (and of the ASAP episodes)", join(REPO_ROOT, 'verifiers'))
      .option('--reference <dir>', 'reference trajectories for the ASAP prefixes (default: --trajectories, else the demo trajectories)')
      .option('--code <file|dir>', 'plain held-out code for general code BPB (source files under a directory)', EMBEDDED_CODE)
      .option('-n, --n <n>', 'pass@K samples per item', positiveInteger, STUDY_DEFAULTS.n)
      .option('--seed <n>', 'sampling and bootstrap seed (a whole number)', integer, STUDY_DEFAULTS.seed)
      .option('--passk-max-tokens <n>', 'tokens per sampled action in pass@K', positiveInteger, STUDY_DEFAULTS.passkMaxTokens)
      .option(
        '--asap-runs <n>',
        'ASAP episodes per instance for every checkpoint (0: no ground truth)',
        nonNegativeInteger,
        STUDY_DEFAULTS.asapRuns,
      )
      .option('--asap-max-steps <n>', 'model steps per ASAP episode', positiveInteger, STUDY_DEFAULTS.asapMaxSteps)
      .option('--asap-max-tokens <n>', 'new tokens per ASAP step', positiveInteger, STUDY_DEFAULTS.asapMaxTokens)
      .option('--asap-instances <n>', "only the first N of the probes' tasks get ASAP episodes", positiveInteger)
      .addOption(
        new Option('--asap-profile <profile>', 'tools the ASAP episodes may use (editor adds str_replace_editor)')
          .choices([...TOOL_PROFILES])
          .default('bash'),
      )
      .option('--concurrency <n>', 'ASAP episodes at once', positiveInteger, STUDY_DEFAULTS.concurrency)
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
      const settings: StudySettings = {
        tasks,
        tasksPath: flags.tasks,
        reference: flags.reference ?? flags.trajectories ?? join(REPO_ROOT, 'trajectories'),
        code: flags.code,
        n: flags.n,
        seed: flags.seed,
        passkMaxTokens: flags.passkMaxTokens,
        asapRuns: flags.asapRuns,
        asapMaxSteps: flags.asapMaxSteps,
        asapMaxTokens: flags.asapMaxTokens,
        asapInstances: flags.asapInstances,
        asapProfile: flags.asapProfile,
        concurrency: flags.concurrency,
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
