/** `probe aptbench`: APTBench-format items through the same backends. */
import { Command } from 'commander';
import { describeCause, InputError } from '../errors.ts';
import { fillTemplate, loadAptItems, scoreAptbench, type AptResult } from '../probes/aptbench.ts';
import { formatPercent, formatTable } from '../report/table.ts';
import { tableName } from '../report/checkpoint-name.ts';
import { checkpointConfig, forEachCheckpoint, itemHooks } from '../pipeline/checkpoint-loop.ts';
import { resolveCheckpoints } from '../pipeline/checkpoints.ts';
import { openRunDir } from '../pipeline/open-run.ts';
import { emitResults } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { positiveInteger } from './args.ts';
import { addCheckpointOptions, type CheckpointFlags } from './checkpoint-options.ts';
import { addRunOptions, checkResume, resultCache, type RunFlags } from './run-options.ts';
import { bosConfig } from '../backends/bos.ts';
import { addBosOption, type BosFlags } from './bos-option.ts';
import { readTextFile } from '../util/safe-tree.ts';

interface AptFlags extends RunFlags, BosFlags, CheckpointFlags {
  items: string;
  prompt: string;
  ckpt?: string[];
  limit?: number;
  json?: boolean;
}

export function aptbenchCommand(): Command {
  return addRunOptions(
    addBosOption(
      addCheckpointOptions(
        new Command('aptbench')
          .description('Score APTBench-format items: letters by generation and likelihood, commands by exact match, free text by ROUGE-L.')
          .requiredOption('--items <file.jsonl>', 'APTBench items')
          .requiredOption('--prompt <template>', 'few-shot prompt template with $FIELD$ placeholders')
          .option('--ckpt <dir...>', 'checkpoint directories; default: the embedded ladder')
          .option('--limit <n>', 'use only the first N items', positiveInteger)
          .option('--json', 'print one JSON document on stdout'),
      ),
    ),
  )
    .addHelpText(
      'after',
      '\nExample:\n  probe aptbench --items ../shared/data/real/aptbench/issue_fix_locate/items.jsonl --prompt ../shared/data/real/aptbench/issue_fix_locate/prompt_3shot.txt',
    )
    .action(async (flags: AptFlags) => {
      let items = loadAptItems(flags.items);
      if (flags.limit !== undefined) items = items.slice(0, flags.limit);
      let template: string;
      try {
        template = readTextFile(flags.prompt, { what: '--prompt' });
      } catch (error) {
        if (error instanceof InputError) throw error;
        throw new InputError({ file: flags.prompt }, `cannot read the prompt template: ${describeCause(error)}`, { cause: error });
      }
      for (const item of items) fillTemplate(template, item, flags.items); // every placeholder resolvable before any work
      checkResume(flags);
      const checkpoints = resolveCheckpoints(flags.ckpt, {}, flags, true);
      const dir = flags.out
        ? openRunDir(
            flags.out,
            {
              verb: 'aptbench',
              config: { prompt: template, ...bosConfig(flags.bos), ...checkpointConfig(flags) },
              checkpoints,
              probeSet: { source: flags.items, items },
              seeds: {},
            },
            Boolean(flags.resume),
          )
        : undefined;
      const run = { dir, quiet: Boolean(flags.json) };
      const { results, failures } = await forEachCheckpoint(
        checkpoints,
        { units: items.length, quiet: run.quiet, cache: resultCache(flags), dtype: flags.dtype, label: 'aptbench', bos: flags.bos, dir },
        (ckpt, backend, tick) => scoreAptbench(ckpt, backend, items, template, flags.items, itemHooks(dir, 'aptbench', ckpt, tick)),
      );
      const errors = reportFailures(failures);
      if (!run.quiet) printTable(results, flags, items.length);
      emitResults(run, { results, ...errors });
    });
}

function printTable(results: AptResult[], flags: AptFlags, items: number): void {
  process.stderr.write(`\nAPTBench items from ${flags.items} (${items})\n\n`);
  process.stderr.write(
    `${formatTable(
      ['checkpoint', 'letter acc', 'likelihood acc', 'exact match', 'rouge-L', 'truncated'],
      results.map((r) => [
        tableName(r.checkpoint),
        formatPercent(r.letter_acc),
        formatPercent(r.likelihood_acc),
        formatPercent(r.exact_match),
        r.rouge_l === null ? '-' : r.rouge_l.toFixed(3),
        String(r.items.filter((i) => i.truncated).length),
      ]),
      [1, 2, 3, 4, 5],
    )}\n`,
  );
}
