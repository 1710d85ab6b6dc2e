/** `probe correlate`: how well each probe metric ranks checkpoints against downstream scores (validate/metric-correlations.ts). */
import { Command } from 'commander';
import { formatTable } from '../report/table.ts';
import type { Interval } from '../stats/correlation.ts';
import { correlateMetrics } from '../validate/metric-correlations.ts';
import { integer, positiveInteger } from './args.ts';

interface CorrelateFlags {
  results: string[];
  scores: string;
  resamples: number;
  seed: number;
  json?: boolean;
  includeControls?: boolean;
}

export function correlateCommand(): Command {
  return new Command('correlate')
    .description('Spearman, Kendall and Pearson of each probe metric against downstream scores, with bootstrap 95% intervals.')
    .requiredOption('--results <files...>', 'JSON printed by probe bpb|mcq|passk --json')
    .requiredOption('--scores <file.csv>', '"checkpoint,score" rows, e.g. post-trained SWE-bench pass@1')
    .option('--resamples <n>', 'bootstrap resamples', positiveInteger, 2000)
    .option('--seed <n>', 'bootstrap seed', integer, 0)
    .option('--include-controls', 'correlate controls (config.json probe_ladder.control: checkpoints that have seen the probes) too')
    .option('--json', 'print one JSON document on stdout')
    .addHelpText('after', '\nExample:\n  probe bpb --json > bpb.json && probe correlate --results bpb.json --scores swebench.csv')
    .action((flags: CorrelateFlags) => {
      const { correlations: rows, warning } = correlateMetrics(flags.results, flags.scores, {
        resamples: flags.resamples,
        seed: flags.seed,
        includeControls: Boolean(flags.includeControls),
      });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ correlations: rows, warning }, null, 2)}\n`);
        return;
      }
      if (warning) process.stderr.write(`probe: WARNING: ${warning}\n`);
      const ci = (i: Interval) => `[${i.low.toFixed(2)}, ${i.high.toFixed(2)}]`;
      process.stderr.write(
        `${formatTable(
          ['metric', 'ckpts', 'spearman', '95% CI (ckpts)', '95% CI (items)', 'kendall', 'pearson'],
          rows.map((r) => [
            r.metric,
            String(r.checkpoints),
            r.spearman.toFixed(3),
            ci(r.spearman_ci_checkpoints),
            ci(r.spearman_ci_items),
            r.kendall.toFixed(3),
            r.pearson.toFixed(3),
          ]),
          [1, 2, 5, 6],
        )}\n`,
      );
    });
}
