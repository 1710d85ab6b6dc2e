/** `probe mcq`: gold decisive action vs verifier-rejected distractors. */
import { Command, Option } from 'commander';
import { rankingAccuracy, scoreMcq, type McqItem, type McqResult, type McqStyle } from '../probes/mcq.ts';
import { formatPercent, formatTable } from '../report/table.ts';
import { MCQ_MIN_DISTRACTORS } from '../schema/probe-item.ts';
import { InputError } from '../errors.ts';
import { EMBEDDED_PROBES } from '../embedded.ts';
import { tableName } from '../report/checkpoint-name.ts';
import { rankedWithTies } from '../stats/ties.ts';
import { integer } from './args.ts';
import { scoreCheckpoints } from '../pipeline/checkpoint-loop.ts';
import { addScoringOptions, emitResults, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { addTensorboardOptions, type TensorboardFlags, tensorboardPlan, writeTensorboardPoints } from './tensorboard-options.ts';

/** What to do about items with too few distractors: a real trajectory's own near misses are often fewer than three. */
const FEWER_DISTRACTORS_HINT =
  'the verifier rejected too few near misses; rebuild with probe build --distractor-ckpt DIR to add candidates sampled from a checkpoint at T*';

interface McqFlags extends ScoringFlags, TensorboardFlags {
  style: McqStyle;
  seed: number;
}

export function mcqCommand(): Command {
  return addTensorboardOptions(
    addScoringOptions(
      new Command('mcq')
        .description('Patch MCQ: does the checkpoint prefer the gold action over distractors the verifier rejects?')
        .addOption(
          new Option('--style <style>', 'likelihood scoring or a generated letter (APTBench style)')
            .choices(['likelihood', 'letter'])
            .default('likelihood'),
        )
        .option('--seed <n>', 'shuffles the option order of --style letter', integer, 0),
    ),
  )
    .addHelpText('after', '\nExample:\n  probe mcq --ckpt checkpoints/ngram-agent checkpoints/attn-agent --probes probes/demo.jsonl --json')
    .action(async (flags: McqFlags) => {
      const run = prepareScoringRun(flags, 'mcq', { config: { style: flags.style }, seeds: { option_order: flags.seed }, scores: true });
      const askable = run.items.filter((item) => item.distractors.length >= MCQ_MIN_DISTRACTORS).length;
      if (askable === 0)
        throw new InputError(
          { file: flags.probes ?? EMBEDDED_PROBES },
          `none of its ${run.items.length} items has the ${MCQ_MIN_DISTRACTORS} distractors MCQ asks with (${FEWER_DISTRACTORS_HINT})`,
        );
      const board = tensorboardPlan(flags, 'mcq', run.checkpoints);
      const { results, failures } = await scoreCheckpoints<McqResult, McqItem>(run, 'mcq', (ckpt, backend, hooks) =>
        scoreMcq(ckpt, backend, run.items, flags.style, flags.seed, hooks),
      );
      const errors = reportFailures(failures);
      const ranking = [...results].sort((a, b) => rankingAccuracy(b) - rankingAccuracy(a)).map((r) => r.checkpoint);
      if (!run.quiet && results.length) {
        const byName = new Map(results.map((r) => [r.checkpoint, r]));
        // Each checkpoint's place by the ranking accuracy, a tie sharing it (three at 30% are 2=, 2=, 2=, not 2, 3, 4).
        const places = rankedWithTies(ranking, (name) => rankingAccuracy(byName.get(name)!), 'higher');
        const rows = places.map(({ item: name, rank }) => {
          const r = byName.get(name)!;
          const s = r.diagnostics.shortest_wins;
          const wins =
            flags.style === 'likelihood'
              ? [s.acc, s.acc_norm, s.acc_pmi].map((v) => formatPercent(v)).join(' / ')
              : formatPercent(s.letter);
          return [
            rank,
            tableName(name),
            formatPercent(r.acc),
            formatPercent(r.acc_norm),
            formatPercent(r.acc_pmi),
            String(r.items.length),
            String(r.skipped.length),
            wins,
          ];
        });
        process.stderr.write(`\nPatch MCQ (${flags.style}) on ${run.items.length} probe items (higher is better)\n\n`);
        const winsHeader = flags.style === 'likelihood' ? 'shortest wins (acc / norm / pmi)' : 'shortest wins';
        process.stderr.write(
          `${formatTable(['rank', 'checkpoint', 'acc', 'acc_norm', 'acc_pmi', 'asked', `left out (<${MCQ_MIN_DISTRACTORS} distractors)`, winsHeader], rows, [0, 2, 3, 4, 5, 6])}\n`,
        );
        // The option set is the same for every checkpoint: one line says how often an option is in the context.
        const { verbatim_in_context: v, shortest_is_gold: g } = results[0]!.diagnostics;
        process.stderr.write(
          `\nthe gold is the strictly shortest option in ${formatPercent(g)} of asked items (what a pick by length alone scores)\n`,
        );
        process.stderr.write(
          `option text verbatim in the context: ${formatPercent(v.any)} of asked items (gold ${formatPercent(v.gold)}, a distractor ${formatPercent(v.distractor)})\n`,
        );
      }
      const leftOut = run.items.length - askable;
      if (!run.quiet && leftOut > 0)
        process.stderr.write(
          `${leftOut} of ${run.items.length} items left out: fewer than ${MCQ_MIN_DISTRACTORS} distractors each (${FEWER_DISTRACTORS_HINT})\n`,
        );
      emitResults(run, { results, ranking, ...errors });
      writeTensorboardPoints(
        board,
        results.map((r) => ({ checkpoint: r.checkpoint, mcq: r })),
        run.quiet,
      );
    });
}
