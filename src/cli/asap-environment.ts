/**
 * `probe asap --env NAME` for a registered environment that runs its own episodes
 * (asap/episode-plan.ts): `--env` and every environment's flags, from the registry; the
 * flags made into the environment's settings; its run; its table.
 */
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import type { EnvironmentDeclaration, EnvironmentResult } from '../asap/environment.ts';
import { attributeName, type EnvironmentOption, type EnvironmentRunSettings } from '../asap/episode-plan.ts';
import type { EpisodeProtocol } from '../asap/episodes.ts';
import { ENVIRONMENT_NAMES, ENVIRONMENTS } from '../environments/registry.ts';
import { resolveCheckpoints } from '../pipeline/checkpoints.ts';
import { runEnvironmentEpisodes } from '../pipeline/episode-run.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { positiveInteger } from './args.ts';
import type { BosFlags } from './bos-option.ts';
import type { CheckpointFlags } from './checkpoint-options.ts';
import { episodeServing } from './episode-serving.ts';
import { printEpisodesTable } from './episodes-table.ts';
import { type HttpFlags, httpOptions } from './http-options.ts';
import { type ImageSourceFlags, imageSources } from './image-source-options.ts';
import type { RunFlags } from './run-options.ts';

/** The flags of `probe asap` an environment's run reads (its own are read by name from the rest). */
export interface EnvironmentVerbFlags extends HttpFlags, RunFlags, BosFlags, CheckpointFlags, ImageSourceFlags, EpisodeProtocol {
  ckpt?: string[];
  instances?: string[];
  limit?: number;
  profile: string;
  prefixSteps: number;
  /** `--action-timeout`, in seconds. */
  actionTimeout: number;
  json?: boolean;
}

/** An environment's flag as commander takes it, its help saying when it applies (`with --env research: …`). */
export function environmentOption(option: EnvironmentOption, when: string): Option {
  const made = new Option(option.flags, `${when}: ${option.help}`);
  if (option.value === 'positive integer') made.argParser(positiveInteger);
  if (option.default !== undefined) made.default(option.default);
  return made;
}

/** `--env`, then every registered environment's own flags. */
export function addEnvironmentOptions(command: Command): Command {
  command.addOption(
    new Option('--env <kind>', `environment: ${ENVIRONMENTS.map((e) => `${e.name} (${e.summary})`).join(', ')}`)
      .choices([...ENVIRONMENT_NAMES])
      .default(ENVIRONMENT_NAMES[0]),
  );
  for (const env of ENVIRONMENTS)
    for (const option of env.episodes?.options ?? []) command.addOption(environmentOption(option, `with --env ${env.name}`));
  return command;
}

/** The environments' flags a ladder verb offers with `--asap-env` (those recorded in its run.json: their inputs). */
export function addLadderEnvironmentOptions(command: Command): Command {
  for (const env of ENVIRONMENTS)
    for (const option of env.episodes?.options ?? [])
      if (option.ladderRecord) command.addOption(environmentOption(option, `with --asap-env ${env.name}`));
  return command;
}

/** The values of every registered environment's own flags, by name (each environment reads its own). */
export function environmentOptionValues(flags: object): Record<string, unknown> {
  const values = flags as Record<string, unknown>;
  return Object.fromEntries(
    ENVIRONMENTS.flatMap((e) => e.episodes?.options ?? []).map((option) => [attributeName(option), values[attributeName(option)]]),
  );
}

export async function runEnvironmentVerb(
  env: EnvironmentDeclaration<EnvironmentResult>,
  flags: EnvironmentVerbFlags,
  profileGiven: boolean,
): Promise<void> {
  const settings: EnvironmentRunSettings = {
    runs: flags.runs,
    concurrency: flags.concurrency,
    seed: flags.seed,
    maxSteps: flags.maxSteps,
    maxTokens: flags.maxTokens,
    temperature: flags.temperature,
    topP: flags.topP,
    prefixSteps: flags.prefixSteps,
    actionTimeoutS: flags.actionTimeout,
    profile: profileGiven ? flags.profile : undefined,
    sources: imageSources(flags),
    instances: flags.instances,
    limit: flags.limit,
    quiet: Boolean(flags.json),
    options: environmentOptionValues(flags),
  };
  // All input is checked before any work.
  const plan = env.episodes!.plan(settings);
  const http = httpOptions(flags, flags.ckpt);
  const checkpoints = resolveCheckpoints(flags.ckpt, http, flags);
  const run = await runEnvironmentEpisodes<EnvironmentResult>(checkpoints, plan, episodeServing(flags, http));
  const errors = reportFailures(run.failures);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ out: run.out, ...run.facts, results: run.results, ...errors }, null, 2)}\n`);
    return;
  }
  printEpisodesTable(env, run.results, flags.runs, plan.title);
  if (plan.notes) process.stderr.write(plan.notes(run.facts));
  process.stderr.write(`\nTranscripts: ${join(run.out, 'episodes')}   results: ${run.resultsFile}\n`);
}
