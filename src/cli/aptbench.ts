/** `probe aptbench`: APTBench-format items through the same backends. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { checkCheckpoint, openBackend } from '../backends/open.ts';
import { embeddedCheckpointDirs } from '../embedded.ts';
import { describeCause, InputError } from '../errors.ts';
import { fillTemplate, loadAptItems, scoreAptbench, type AptResult } from '../probes/aptbench.ts';
import { createProgress } from '../report/progress.ts';
import { formatTable } from '../report/table.ts';
import { reportFailures } from './checkpoint-runs.ts';
import { positiveInteger } from './sandbox-options.ts';
import { relative } from 'node:path';

interface AptFlags { items: string; prompt: string; ckpt?: string[]; limit?: number; json?: boolean }

export function aptbenchCommand(): Command {
  return new Command('aptbench')
    .description('Score APTBench-format items: letters by generation and likelihood, commands by exact match, free text by ROUGE-L.')
    .requiredOption('--items <file.jsonl>', 'APTBench items')
    .requiredOption('--prompt <template>', 'few-shot prompt template with $FIELD$ placeholders')
    .option('--ckpt <dir...>', 'checkpoint directories; default: the embedded ladder')
    .option('--limit <n>', 'use only the first N items', positiveInteger)
    .option('--json', 'print one JSON document on stdout')
    .addHelpText('after', '\nExample:\n  probe aptbench --items ../shared/data/real/aptbench/issue_fix_locate/items.jsonl --prompt ../shared/data/real/aptbench/issue_fix_locate/prompt_3shot.txt')
    .action(async (flags: AptFlags) => {
      let items = loadAptItems(flags.items);
      if (flags.limit !== undefined) items = items.slice(0, flags.limit);
      let template: string;
      try {
        template = readFileSync(flags.prompt, 'utf8');
      } catch (error) {
        throw new InputError({ file: flags.prompt }, `cannot read the prompt template: ${describeCause(error)}`, { cause: error });
      }
      for (const item of items) fillTemplate(template, item, flags.items); // every placeholder resolvable before any work
      const checkpoints = flags.ckpt ?? embeddedCheckpointDirs().map((d) => relative(process.cwd(), d) || '.');
      for (const c of checkpoints) checkCheckpoint(c);
      const progress = createProgress(items.length * checkpoints.length, !flags.json);
      const results: AptResult[] = [];
      const failures: InputError[] = [];
      try {
        for (const ckpt of checkpoints) {
          try {
            const backend = await openBackend(ckpt);
            try { results.push(await scoreAptbench(ckpt, backend, items, template, flags.items, () => progress.tick(ckpt))); } finally { await backend.close(); }
          } catch (error) {
            if (!(error instanceof InputError)) throw error;
            failures.push(error);
          }
        }
      } finally {
        progress.stop();
      }
      const errors = reportFailures(failures);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ results, ...errors }, null, 2)}\n`);
        return;
      }
      const pct = (v: number | null) => (v === null ? '-' : `${(100 * v).toFixed(1)}%`);
      process.stderr.write(`\nAPTBench items from ${flags.items} (${items.length})\n\n`);
      process.stderr.write(`${formatTable(['checkpoint', 'letter acc', 'likelihood acc', 'exact match', 'rouge-L', 'truncated'],
        results.map((r) => [r.checkpoint, pct(r.letter_acc), pct(r.likelihood_acc), pct(r.exact_match), r.rouge_l === null ? '-' : r.rouge_l.toFixed(3), String(r.items.filter((i) => i.truncated).length)]), [1, 2, 3, 4, 5])}\n`);
    });
}
