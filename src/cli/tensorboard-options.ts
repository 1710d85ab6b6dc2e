/**
 * `--tensorboard DIR`, `--step N` and `--tb-run NAME`, shared by the scoring verbs that
 * write their point beside a training run's curves (bpb, mcq, passk); the places are
 * settled and the files written by watch/verb-tensorboard.ts.
 */
import type { Command } from 'commander';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { InputError } from '../errors.ts';
import type { ScoringVerb, VerbScores } from '../report/step-tensorboard.ts';
import { planVerbTensorboard, type VerbTensorboard, writeVerbTensorboard } from '../watch/verb-tensorboard.ts';
import { trainingStep } from './args.ts';

export interface TensorboardFlags {
  tensorboard?: string;
  step?: number;
  tbRun?: string;
}

export function addTensorboardOptions(command: Command): Command {
  return command
    .option(
      '--tensorboard <dir>',
      "also write each checkpoint's score as TensorBoard scalars at its training step: DIR/<training run>/, tags as probe watch's",
    )
    .option(
      '--step <n>',
      "the checkpoint's training step (default: its config.json, trainer_state.json or name, as probe watch reads it)",
      trainingStep,
    )
    .option('--tb-run <name>', "the TensorBoard run (default: the checkpoint's training run, as probe watch names it)");
}

/** Where the points go, checked before any scoring; undefined without --tensorboard (where --step and --tb-run are refused). */
export function tensorboardPlan(
  flags: TensorboardFlags,
  verb: ScoringVerb,
  checkpoints: readonly Checkpoint[],
): VerbTensorboard | undefined {
  if (flags.tensorboard === undefined) {
    for (const [flag, given] of [
      ['--step', flags.step],
      ['--tb-run', flags.tbRun],
    ] as const)
      if (given !== undefined) throw new InputError({ file: flag }, 'places a point in TensorBoard: give --tensorboard DIR with it');
    return undefined;
  }
  return planVerbTensorboard({ dir: flags.tensorboard, step: flags.step, run: flags.tbRun }, verb, checkpoints);
}

/** Writes the points (after the verb's results are out) and says where, unless quiet. */
export function writeTensorboardPoints(board: VerbTensorboard | undefined, scores: readonly VerbScores[], quiet: boolean): void {
  if (!board) return;
  for (const { checkpoint, step, source, tags, write } of writeVerbTensorboard(board, scores)) {
    if (!write) {
      process.stderr.write(`TensorBoard: no point for ${checkpoint} at step ${step}: its score is not a finite number\n`);
      continue;
    }
    if (!quiet) process.stderr.write(`TensorBoard: ${tags.join(', ')} at step ${step} (${source}) in ${write.file}\n`);
    // What a TensorBoard already reading the run makes of it (docs/watch.md, "From the scoring verbs"): said even with --json.
    if (write.replaced)
      process.stderr.write(
        `TensorBoard: replaced the point at step ${step}; a TensorBoard already showing it shows the new one once restarted\n`,
      );
    if (write.later.length)
      process.stderr.write(
        `TensorBoard: step ${step} lands before steps already written (${write.later.join(', ')}); a TensorBoard already reading this run drops those until restarted\n`,
      );
  }
}
