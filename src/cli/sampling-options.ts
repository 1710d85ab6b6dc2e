/** `--temperature` and `--top-p`, written once for the verbs that sample (`probe passk`, `probe asap`), each with its own defaults. */
import type { Command } from 'commander';
import { nonNegativeNumber, probability } from './args.ts';

export function addSamplingOptions(command: Command, defaults: { temperature: number; topP: number }): Command {
  return command
    .option('--temperature <t>', 'sampling temperature (≥ 0; 0 is greedy)', nonNegativeNumber, defaults.temperature)
    .option('--top-p <p>', 'nucleus mass, 0 to 1', probability, defaults.topP);
}
