/** `probe passk`: sample continuations at T*, run them in a jailed sandbox, verify. */
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { addSamplingOptions } from './sampling-options.ts';
import { EMBEDDED_SAMPLING_PROBES, REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { PASSK_DEFAULTS } from '../probes/passk.ts';
import { formatTable } from '../report/table.ts';
import { tableName } from '../report/checkpoint-name.ts';
import { SANDBOX_KINDS } from '../settings/sandbox-kinds.ts';
import { loadTasks } from '../verify/load-task.ts';
import { type PasskRunSettings, runPasskOverCheckpoints } from '../pipeline/passk.ts';
import { addScoringOptions, emitResults, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { addTensorboardOptions, type TensorboardFlags, tensorboardPlan, writeTensorboardPoints } from './tensorboard-options.ts';
import { integer, positiveInteger } from './args.ts';
import { passAtKs } from '../protocol.ts';

interface PasskFlags extends ScoringFlags, PasskRunSettings, TensorboardFlags {
  tasks: string;
}

export function passkCommand(): Command {
  return addTensorboardOptions(
    addScoringOptions(
      addSamplingOptions(
        new Command('passk')
          .description("Prefix-conditioned pass@K: sample actions at T*, apply them in a jailed sandbox, let the task's tests decide.")
          .option('--tasks <dir|file>', "task records of the probes' tasks", join(REPO_ROOT, 'verifiers'))
          .option('-n, --n <n>', 'samples per item', positiveInteger, PASSK_DEFAULTS.n),
        PASSK_DEFAULTS,
      )
        .option('--max-tokens <n>', 'tokens per sampled action', positiveInteger, PASSK_DEFAULTS.maxTokens)
        .option('--seed <n>', 'sampling seed (a whole number)', integer, PASSK_DEFAULTS.seed)
        .option(
          '--steps <s>',
          'a short rollout of S actions (each output shown to the model) instead of one',
          positiveInteger,
          PASSK_DEFAULTS.steps,
        )
        .addOption(new Option('--sandbox <kind>', 'where sampled actions run (always jailed)').choices([...SANDBOX_KINDS]).default('local'))
        .option('--concurrency <n>', 'sandboxes per task', positiveInteger, 2),
    ),
  )
    .addHelpText('after', '\nExample:\n  probe passk --ckpt checkpoints/attn-agent --probes probes/demo.jsonl -n 16 --json')
    .action(async (flags: PasskFlags) => {
      const tasks = new Map((await loadTasks(flags.tasks)).map((t) => [t.instance_id, t]));
      const run = prepareScoringRun(flags, 'passk', {
        config: {
          tasks: resolve(flags.tasks),
          n: flags.n,
          temperature: flags.temperature,
          top_p: flags.topP,
          max_tokens: flags.maxTokens,
          steps: flags.steps,
          sandbox: flags.sandbox,
        },
        seeds: { sampling: flags.seed },
        defaultProbes: EMBEDDED_SAMPLING_PROBES,
        select: (all) => {
          for (const item of all)
            if (!tasks.has(item.task))
              throw new InputError({ file: flags.tasks, field: 'instance_id' }, `no task record for probe ${item.id} (task ${item.task})`);
          return all;
        },
      });
      const board = tensorboardPlan(flags, 'passk', run.checkpoints);
      const { results, failures } = await runPasskOverCheckpoints(run, tasks, {
        n: flags.n,
        steps: flags.steps,
        temperature: flags.temperature,
        topP: flags.topP,
        maxTokens: flags.maxTokens,
        seed: flags.seed,
        sandbox: flags.sandbox,
        concurrency: flags.concurrency,
      });
      const errors = reportFailures(failures);
      if (!run.quiet) {
        const ks = passAtKs(flags.n);
        const rows = results.map((r) => [
          tableName(r.checkpoint),
          ...ks.map((k) => `${(100 * r.pass_at[String(k)]!).toFixed(1)}%`),
          `${(100 * r.parse_failure_rate).toFixed(1)}%`,
          `${(100 * (r.not_returned_rate ?? 0)).toFixed(1)}%`,
        ]);
        process.stderr.write(`\nPrefix-conditioned pass@k on ${run.items.length} probe items, n = ${flags.n}\n\n`);
        process.stderr.write(
          `${formatTable(['checkpoint', ...ks.map((k) => `pass@${k}`), 'unparsable', 'not returned'], rows, ks.map((_, i) => i + 1).concat(ks.length + 1, ks.length + 2))}\n`,
        );
        for (const r of results.filter((r) => (r.not_returned_rate ?? 0) > 0))
          process.stderr.write(
            `${tableName(r.checkpoint)}: ${(100 * r.not_returned_rate!).toFixed(1)}% of samples were generated but not returned by the server (counted as failures; each sample's reason is in the results)\n`,
          );
      }
      emitResults(run, { results, ...errors });
      writeTensorboardPoints(
        board,
        results.map((r) => ({ checkpoint: r.checkpoint, passk: r })),
        run.quiet,
      );
    });
}
