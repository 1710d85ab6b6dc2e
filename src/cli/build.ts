/** `probe build`: replay every trajectory against its task and write probe items at T*. */
import { Command, Option } from 'commander';
import type { RestoreMode } from '../replay/build.ts';
import { CONTEXT_FORMATS, type ContextFormat } from '../replay/render-context.ts';
import { IMAGE_NAMESPACE_HELP, parseImageNamespace } from '../swebench/image-name.ts';
import { positiveInteger } from './args.ts';
import { describeCounts } from '../pipeline/build.ts';
import { buildProbeFile } from '../pipeline/build-file.ts';
import { summarizeProbeQuality } from '../report/probe-quality-text.ts';
import { addSandboxOptions, replaySettings, type SandboxFlags } from './sandbox-options.ts';

interface BuildFlags extends SandboxFlags {
  resume?: boolean;
  trajectories: string;
  includeUnresolved?: boolean;
  tasks: string;
  out: string;
  context: ContextFormat[];
  restore: RestoreMode;
  distractors: boolean;
  distractorCkpt?: string;
  distractorSamples: number;
  json?: boolean;
  strict?: boolean;
  imageNamespace?: string | null;
}

export function buildCommand(): Command {
  return addSandboxOptions(
    new Command('build')
      .description('Replay trajectories against their tasks and write a probe item at each decisive step.')
      .requiredOption(
        '--trajectories <dir|file>',
        'trajectory files, each named <instance_id>.<anything>; or a dataset file of trajectory rows (.parquet, .jsonl, .json) matched to tasks by instance_id',
      )
      .option('--include-unresolved', 'also build dataset rows whose run did not resolve its task (skipped by default)')
      .requiredOption(
        '--tasks <dir|file>',
        'task records: <id>/task.json entries, or a dataset file as published (SWE-bench .jsonl, .json, .parquet)',
      )
      .option('--image-namespace <ns>', IMAGE_NAMESPACE_HELP, parseImageNamespace)
      .requiredOption('--out <file>', 'probe items to write (.jsonl)')
      .addOption(new Option('--context <formats...>', 'how contexts are rendered').choices([...CONTEXT_FORMATS]).default(['native']))
      .addOption(
        new Option(
          '--restore <mode>',
          'how a probe restores the state before T*: base commit + cumulative patch, or replaying the earlier actions',
        )
          .choices(['patch', 'replay'])
          .default('patch'),
      )
      .option('--no-distractors', 'skip distractor search (each candidate costs a verifier run)')
      .option('--distractor-ckpt <dir>', 'also offer actions sampled from this checkpoint directory at T* as distractor candidates')
      .option('--distractor-samples <n>', 'samples drawn per item with --distractor-ckpt', positiveInteger, 8)
      .option('--resume', 'continue an interrupted build from <out>.progress.jsonl (trajectories already replayed are not replayed again)')
      .option('--strict', 'exit 1 when any trajectory is rejected (flaky ones included); bad input still exits 2')
      .option('--json', 'print a JSON summary on stdout'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  probe build --trajectories trajectories --tasks verifiers --out probes/demo.jsonl --context native asap',
    )
    .action(async (flags: BuildFlags) => {
      const built = await buildProbeFile({
        out: flags.out,
        trajectories: flags.trajectories,
        includeUnresolved: flags.includeUnresolved,
        tasks: flags.tasks,
        imageNamespace: flags.imageNamespace,
        contexts: flags.context,
        restore: flags.restore,
        distractors: flags.distractors,
        distractorCkpt: flags.distractorCkpt,
        distractorSamples: flags.distractorSamples,
        replay: replaySettings(flags),
        resume: Boolean(flags.resume),
        quiet: Boolean(flags.json),
      });
      const { items, trajectories: outcomes, inputErrors, skipped, counts, quality } = built;
      if (flags.json)
        process.stdout.write(
          `${JSON.stringify({ out: flags.out, items: items.length, quality: { file: quality.file, warnings: quality.report.warnings.map((w) => w.code) }, counts, trajectories: outcomes, ...(skipped ? { skipped } : {}) }, null, 2)}\n`,
        );
      else {
        for (const o of outcomes)
          process.stderr.write(
            `${o.rejected ? 'rejected' : `T* = ${o.decisiveStep}`.padEnd(8)}  ${o.trajectory}${o.rejected ? `: ${o.rejected}` : ''}\n`,
          );
        if (skipped)
          process.stderr.write(
            `dataset rows skipped: ${skipped.unresolved} unresolved${skipped.unresolved && !flags.includeUnresolved ? ' (--include-unresolved builds them)' : ''}, ${skipped.noTask} for tasks not given\n`,
          );
        process.stderr.write(`\n${items.length} probe items from ${counts.accepted} of ${outcomes.length} trajectories → ${flags.out}\n`);
        process.stderr.write(`trajectories: ${describeCounts(counts)}\n`);
        process.stderr.write(summarizeProbeQuality(quality.report, quality.file));
      }
      if (inputErrors) process.exitCode = 2;
      else if (flags.strict && counts.accepted < outcomes.length) process.exitCode = 1;
    });
}
