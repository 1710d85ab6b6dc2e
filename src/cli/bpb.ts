/** `probe bpb`: Decisive-Action BPB of every checkpoint on a probe set. */
import { Command } from 'commander';
import { rankByBpb, scoreBpb, type BpbItem } from '../probes/bpb.ts';
import { formatTable } from '../report/table.ts';
import { tableName } from '../report/checkpoint-name.ts';
import { rankedWithTies } from '../stats/ties.ts';
import { scoreCheckpoints } from '../pipeline/checkpoint-loop.ts';
import { addScoringOptions, emitResults, prepareScoringRun, type ScoringFlags } from './scoring-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { addTensorboardOptions, type TensorboardFlags, tensorboardPlan, writeTensorboardPoints } from './tensorboard-options.ts';

export function bpbCommand(): Command {
  return addTensorboardOptions(
    addScoringOptions(
      new Command('bpb').description("Bits per byte of each probe's gold decisive action given its context (lower is better)."),
    ),
  )
    .addHelpText(
      'after',
      '\nExample:\n  probe bpb --ckpt checkpoints/ngram-prose checkpoints/ngram-agent --probes probes/ --out runs/bpb-ladder --json\n  probe bpb --ckpt /ckpts/llama-2-7b-onnx --bos never   # no BOS, as lm-evaluation-harness by default\n  probe bpb --ckpt /ckpts/run-7/step-4000 --probes probes/ --tensorboard tb/ --step 4000   # beside the loss curve',
    )
    .action(async (flags: ScoringFlags & TensorboardFlags) => {
      const run = prepareScoringRun(flags, 'bpb', { config: {}, scores: true });
      const board = tensorboardPlan(flags, 'bpb', run.checkpoints);
      const { results, failures } = await scoreCheckpoints<Awaited<ReturnType<typeof scoreBpb>>, BpbItem>(
        run,
        'bpb',
        (ckpt, backend, hooks) => scoreBpb(ckpt, backend, run.items, hooks),
      );
      const ranking = rankByBpb(results);
      const errors = reportFailures(failures);
      if (!run.quiet && results.length) {
        const byName = new Map(results.map((r) => [r.checkpoint, r]));
        const places = rankedWithTies(ranking, (name) => byName.get(name)!.bpb, 'lower');
        const rows = places.map(({ item: name, rank }) => {
          const r = byName.get(name)!;
          const truncated = r.items.filter((it) => it.truncated).length;
          return [rank, tableName(name), r.bpb.toFixed(4), String(r.items.length), String(r.tokens), String(r.bytes), String(truncated)];
        });
        process.stderr.write(`\nDecisive-Action BPB on ${run.items.length} probe items (lower is better)\n\n`);
        process.stderr.write(
          `${formatTable(['rank', 'checkpoint', 'bpb', 'items', 'tokens', 'bytes', 'truncated'], rows, [0, 2, 3, 4, 5, 6])}\n`,
        );
      }
      emitResults(run, {
        results: results.map((r) => ({
          checkpoint: r.checkpoint,
          backend: r.backend,
          bpb: r.bpb,
          nats: r.nats,
          bytes: r.bytes,
          tokens: r.tokens,
          items: r.items.map((i) => ({
            id: i.id,
            bpb: i.bpb,
            nats: i.nats,
            bytes: i.bytes,
            tokens: i.tokens,
            truncated: i.truncated,
            greedy: i.greedy,
          })),
        })),
        ranking,
        ...errors,
      });
      writeTensorboardPoints(
        board,
        results.map((r) => ({ checkpoint: r.checkpoint, bpb: r })),
        run.quiet,
      );
    });
}
