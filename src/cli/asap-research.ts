/** `probe asap --env research`: the deep-research environment of the ASAP verb (flags and its table). */
import type { EpisodeProtocol } from '../asap/episodes.ts';
import { RESEARCH_ENVIRONMENT } from '../research/environment.ts';
import { printEpisodesTable } from './episodes-table.ts';
import { episodeServing } from './episode-serving.ts';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { EMBEDDED_RESEARCH_SET } from '../embedded.ts';
import { loadResearchSet, runResearchOverCheckpoints } from '../pipeline/research.ts';
import { SEARCH_K } from '../research/search-index.ts';
import { ASAP_ENVIRONMENTS } from '../protocol.ts';
import { positiveInteger } from './args.ts';
import type { BosFlags } from './bos-option.ts';
import type { CheckpointFlags } from './checkpoint-options.ts';
import { type HttpFlags, httpOptions } from './http-options.ts';
import type { RunFlags } from './run-options.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { resolveCheckpoints } from '../pipeline/checkpoints.ts';

export interface ResearchFlags extends HttpFlags, RunFlags, BosFlags, CheckpointFlags, EpisodeProtocol {
  ckpt?: string[];
  researchSet: string;
  searchK: number;
  limit?: number;
  json?: boolean;
}

export function addEnvironmentOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--env <kind>',
        'environment: swe (repository tasks, tests decide), terminal (Terminal-Bench tasks in a container, their tests decide) or research (a document corpus, the answer decides)',
      )
        .choices([...ASAP_ENVIRONMENTS])
        .default('swe'),
    )
    .option('--research-set <dir>', 'with --env research: corpus.jsonl + queries.jsonl (BrowseComp-Plus layout)', EMBEDDED_RESEARCH_SET)
    .option('--search-k <n>', 'with --env research: hits a search shows', positiveInteger, SEARCH_K);
}

export async function runResearchVerb(flags: ResearchFlags): Promise<void> {
  // All input is checked before any work.
  const set = loadResearchSet(flags.researchSet, flags.limit);
  const http = httpOptions(flags, flags.ckpt);
  const checkpoints = resolveCheckpoints(flags.ckpt, http, flags);
  const run = await runResearchOverCheckpoints(checkpoints, set, {
    set: flags.researchSet,
    runs: flags.runs,
    maxSteps: flags.maxSteps,
    maxTokens: flags.maxTokens,
    temperature: flags.temperature,
    topP: flags.topP,
    searchK: flags.searchK,
    concurrency: flags.concurrency,
    ...episodeServing(flags, http),
  });
  const errors = reportFailures(run.failures);
  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ out: run.out, results: run.results, ...errors }, null, 2)}\n`);
    return;
  }
  printEpisodesTable(
    RESEARCH_ENVIRONMENT,
    run.results,
    flags.runs,
    `Deep research on ${set.queries.length} questions × ${flags.runs} runs`,
  );
  process.stderr.write(`\nTranscripts: ${join(run.out, 'episodes')}   results: ${run.resultsFile}\n`);
}
