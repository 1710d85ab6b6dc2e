/** `probe asap --env terminal`: Terminal-Bench tasks in the ASAP verb (flags, checks and its table). */
import type { EpisodeProtocol } from '../asap/episodes.ts';
import { TERMINAL_ENVIRONMENT } from '../terminal/environment.ts';
import { printEpisodesTable } from './episodes-table.ts';
import { episodeServing } from './episode-serving.ts';
import { join } from 'node:path';
import type { Command } from 'commander';
import { EMBEDDED_TERMINAL_TASKS } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { runTerminalOverCheckpoints } from '../pipeline/terminal.ts';
import { imageOriginLines } from '../report/image-origins.ts';
import { TERMINAL_PROFILES, type TerminalProfile } from '../terminal/actions.ts';
import { loadTerminalTasks } from '../terminal/task.ts';
import type { BosFlags } from './bos-option.ts';
import type { CheckpointFlags } from './checkpoint-options.ts';
import { type HttpFlags, httpOptions } from './http-options.ts';
import { type ImageSourceFlags, imageSources } from './image-source-options.ts';
import type { RunFlags } from './run-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { resolveCheckpoints } from '../pipeline/checkpoints.ts';

export interface TerminalFlags extends HttpFlags, RunFlags, BosFlags, CheckpointFlags, ImageSourceFlags, EpisodeProtocol {
  ckpt?: string[];
  terminalTasks: string;
  instances?: string[];
  limit?: number;
  profile: string;
  prefixSteps: number;
  actionTimeout: number;
  json?: boolean;
}

export function addTerminalOptions(command: Command): Command {
  return command.option(
    '--terminal-tasks <dir>',
    'with --env terminal: Terminal-Bench 2.x task directories (task.toml, instruction.md, environment/, tests/, solution/), or one of them',
    EMBEDDED_TERMINAL_TASKS,
  );
}

/** `--profile` for this environment: terminus (the default: keystrokes to one tmux shell) or bash. */
function terminalProfile(flags: TerminalFlags, profileGiven: boolean): TerminalProfile {
  if (!profileGiven) return 'terminus';
  if (!(TERMINAL_PROFILES as readonly string[]).includes(flags.profile))
    throw new InputError({ file: '--profile' }, `with --env terminal the profile is terminus or bash, not ${flags.profile}`);
  return flags.profile as TerminalProfile;
}

export async function runTerminalVerb(flags: TerminalFlags, profileGiven: boolean): Promise<void> {
  // All input is checked before any work.
  const profile = terminalProfile(flags, profileGiven);
  let tasks = loadTerminalTasks(flags.terminalTasks);
  if (flags.instances) {
    const known = new Set(tasks.map((t) => t.id));
    const missing = flags.instances.filter((i) => !known.has(i));
    if (missing.length)
      throw new InputError({ file: flags.terminalTasks, field: '--instances' }, `no task directory ${missing.join(', ')}`);
    tasks = tasks.filter((t) => flags.instances!.includes(t.id));
  }
  if (flags.limit !== undefined) tasks = tasks.slice(0, flags.limit);
  const http = httpOptions(flags, flags.ckpt);
  const checkpoints = resolveCheckpoints(flags.ckpt, http, flags);
  const run = await runTerminalOverCheckpoints(checkpoints, tasks, {
    tasksPath: flags.terminalTasks,
    profile,
    runs: flags.runs,
    concurrency: flags.concurrency,
    prefixSteps: flags.prefixSteps,
    maxSteps: flags.maxSteps,
    maxTokens: flags.maxTokens,
    temperature: flags.temperature,
    topP: flags.topP,
    actionTimeoutMs: flags.actionTimeout * 1000,
    sources: imageSources(flags),
    ...episodeServing(flags, http),
  });
  const errors = reportFailures(run.failures);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ out: run.out, tasks: run.tasks, results: run.results, ...errors }, null, 2)}\n`);
    return;
  }
  printEpisodesTable(
    TERMINAL_ENVIRONMENT,
    run.results,
    flags.runs,
    `Terminal tasks: ${tasks.length} tasks × ${flags.runs} runs (${profile} profile)`,
  );
  process.stderr.write(imageOriginLines(run.tasks));
  process.stderr.write(`\nTranscripts: ${join(run.out, 'episodes')}   results: ${run.resultsFile}\n`);
}
