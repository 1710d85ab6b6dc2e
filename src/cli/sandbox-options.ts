/** Options shared by the verbs that run tasks in sandboxes. */
import { Command, Option } from 'commander';
import { positiveInteger } from './args.ts';
import { openSandbox, SANDBOX_KINDS, type SandboxKind } from '../sandbox/open.ts';
import type { ReplayOptions } from '../replay/replay.ts';

export function addSandboxOptions(command: Command): Command {
  return command
    .addOption(new Option('--sandbox <kind>', 'where commands run').choices([...SANDBOX_KINDS]).default('local'))
    .option('--concurrency <n>', 'sandboxes verifying states at once', positiveInteger, 4)
    .option('--repeats <n>', 'times the final state is verified (a varying verdict marks the task flaky)', positiveInteger, 3);
}

export interface SandboxFlags { sandbox: SandboxKind; concurrency: number; repeats: number }

export function replayOptions(flags: SandboxFlags): ReplayOptions {
  return {
    openSandbox: (task) => openSandbox(flags.sandbox, task),
    sandboxName: flags.sandbox,
    concurrency: flags.concurrency,
    repeats: flags.repeats,
  };
}
