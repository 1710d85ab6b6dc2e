/**
 * `probe asap --env research`: deep-research episodes of every checkpoint over a set in
 * BrowseComp-Plus's layout (a directory with corpus.jsonl and queries.jsonl), in a run
 * directory that a rerun with --resume continues episode by episode.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { InputError } from '../errors.ts';
import { type ResearchDoc, type ResearchQuery, loadCorpus, loadQueries } from '../research/corpus.ts';
import { researchTranscript, researchTask } from '../research/episode.ts';
import { type ResearchEpisodeRecord, type ResearchResult, type ResearchRunOptions, runResearch } from '../research/run.ts';
import { ResearchIndex } from '../research/search-index.ts';
import type { Failure } from './checkpoint-loop.ts';
import { type EpisodeRunServing, runEpisodesOverCheckpoints } from './episode-run.ts';

/** The episodes' settings (research/run.ts), and where the run is and how its checkpoints are served. */
export interface ResearchRunSettings extends ResearchRunOptions, EpisodeRunServing {
  /** A directory holding corpus.jsonl and queries.jsonl. */
  set: string;
}

export interface ResearchSet {
  corpus: ResearchDoc[];
  queries: ResearchQuery[];
  index: ResearchIndex;
}

/** Reads and checks a set before any work. */
export function loadResearchSet(dir: string, limit?: number): ResearchSet {
  const corpusFile = join(dir, 'corpus.jsonl');
  const queriesFile = join(dir, 'queries.jsonl');
  for (const file of [corpusFile, queriesFile])
    if (!existsSync(file))
      throw new InputError(
        { file: dir, field: '--research-set' },
        `no ${file.slice(dir.length + 1)} here (a research set is corpus.jsonl + queries.jsonl)`,
      );
  const corpus = loadCorpus(corpusFile);
  const queries = loadQueries(queriesFile, corpus).slice(0, limit);
  return { corpus, queries, index: new ResearchIndex(corpus) };
}

export interface ResearchRunOutcome {
  out: string;
  resultsFile: string;
  results: ResearchResult[];
  failures: Failure[];
}

export async function runResearchOverCheckpoints(
  checkpoints: readonly Checkpoint[],
  set: ResearchSet,
  s: ResearchRunSettings,
): Promise<ResearchRunOutcome> {
  const byId = new Map(set.queries.map((q) => [q.query_id, q]));
  const run = await runEpisodesOverCheckpoints<ResearchEpisodeRecord, ResearchResult>(
    checkpoints,
    {
      kind: 'research',
      config: {
        env: 'research',
        set: resolve(s.set),
        runs: s.runs,
        max_steps: s.maxSteps,
        max_tokens: s.maxTokens,
        temperature: s.temperature,
        top_p: s.topP,
        search_k: s.searchK,
      },
      probeSet: { path: s.set, instances: set.queries },
      episodes: set.queries.length * s.runs,
      describe: (out) =>
        `the deep-research run in ${out} (${set.queries.length} questions × ${s.runs} runs, ${set.corpus.length} documents)`,
      run: (ckpt, backend, hooks) => runResearch(ckpt, backend, set.index, set.queries, s, hooks),
      transcript: (record) => {
        const query = byId.get(record.query_id);
        if (!query) return undefined;
        const text = researchTranscript(researchTask(query.query, s.searchK), record.steps).replace(/\n## Thinking\n$/, '\n');
        return {
          instance: record.query_id,
          run: record.run,
          text: `${text}\n<!-- answer: ${JSON.stringify(record.answer)} · ${record.correct ? 'correct' : 'wrong'} · ${record.termination} -->\n`,
        };
      },
    },
    s,
  );
  const resultsFile = run.dir.writeResults({ env: 'research', settings: run.config, results: run.results });
  return { out: run.out, resultsFile, results: run.results, failures: run.failures };
}
