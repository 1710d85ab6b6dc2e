/** Options shared by the verbs that run tasks in sandboxes. */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { positiveInteger } from './args.ts';
import { addImageSourceOptions, type ImageSourceFlags, imageSources } from './image-source-options.ts';
import { SANDBOX_KINDS, type SandboxKind } from '../settings/sandbox-kinds.ts';
import type { SandboxReplaySettings } from '../replay/sandbox-replay.ts';
import { isUsableWorkdir } from '../replay/workdir.ts';

/** A directory inside the sandbox where a repository may go: absolute, not `/` nor a system directory. */
function absoluteDir(value: string): string {
  if (!isUsableWorkdir(value))
    throw new InvalidArgumentError('expected an absolute directory outside /, /tmp, /usr and the other system directories');
  return value.replace(/\/+$/, '');
}

export function addSandboxOptions(command: Command): Command {
  return addImageSourceOptions(command)
    .addOption(new Option('--sandbox <kind>', 'where commands run').choices([...SANDBOX_KINDS]).default('local'))
    .option('--concurrency <n>', 'sandboxes verifying states at once', positiveInteger, 4)
    .option('--repeats <n>', 'times the final state is verified (a varying verdict marks the task flaky)', positiveInteger, 3)
    .option(
      '--workdir <dir>',
      "where the repository is placed for a replay (default: where the trajectory ran, else the task's workdir)",
      absoluteDir,
    );
}

export interface SandboxFlags extends ImageSourceFlags {
  sandbox: SandboxKind;
  concurrency: number;
  repeats: number;
  workdir?: string;
}

/** Where a replay runs, as the flags say (replay/sandbox-replay.ts opens the sandboxes). */
export function replaySettings(flags: SandboxFlags): SandboxReplaySettings {
  return {
    sandbox: flags.sandbox,
    imageSources: imageSources(flags),
    concurrency: flags.concurrency,
    repeats: flags.repeats,
    workdir: flags.workdir,
  };
}
