/**
 * Deep-research episodes as `probe asap --env research` and the ladder's `--asap-env
 * research` run them (asap/episode-plan.ts): a set in BrowseComp-Plus's layout (a
 * directory with corpus.jsonl and queries.jsonl) read, checked and indexed before any work.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type EnvironmentEpisodes,
  type EnvironmentOption,
  type EnvironmentPlan,
  episodeProtocolOf,
  optionValue,
} from '../asap/episode-plan.ts';
import { EMBEDDED_RESEARCH_SET } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { ResearchEpisodeRecordSchema } from '../schema/episode-records.ts';
import { loadCorpus, loadQueries } from './corpus.ts';
import { researchTask, researchTranscript } from './episode.ts';
import { type ResearchEpisodeRecord, type ResearchResult, type ResearchRunOptions, runResearch } from './run.ts';
import { ResearchIndex, SEARCH_K } from './search-index.ts';

const SET: EnvironmentOption = {
  flags: '--research-set <dir>',
  help: 'corpus.jsonl + queries.jsonl (BrowseComp-Plus layout)',
  default: EMBEDDED_RESEARCH_SET,
  ladderRecord: 'research_set',
};
const SEARCH_HITS: EnvironmentOption = {
  flags: '--search-k <n>',
  help: 'hits a search shows',
  default: SEARCH_K,
  value: 'positive integer',
};

/** Reads and checks a set before any work. */
function loadResearchSet(dir: string, limit?: number) {
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

export const RESEARCH_EPISODES: EnvironmentEpisodes = {
  options: [SET, SEARCH_HITS],
  plan(s): EnvironmentPlan<ResearchEpisodeRecord, ResearchResult> {
    const setDir = optionValue<string>(s.options, SET);
    const set = loadResearchSet(setDir, s.limit);
    const options: ResearchRunOptions = { ...episodeProtocolOf(s), searchK: optionValue<number>(s.options, SEARCH_HITS) };
    const byId = new Map(set.queries.map((q) => [q.query_id, q]));
    return {
      kind: 'research',
      title: `Deep research on ${set.queries.length} questions × ${s.runs} runs`,
      config: {
        env: 'research',
        set: resolve(setDir),
        runs: s.runs,
        max_steps: s.maxSteps,
        max_tokens: s.maxTokens,
        temperature: s.temperature,
        top_p: s.topP,
        search_k: options.searchK,
      },
      probeSet: { path: setDir, instances: set.queries },
      recordSchema: ResearchEpisodeRecordSchema,
      episodes: set.queries.length * s.runs,
      describe: (out) =>
        `the deep-research run in ${out} (${set.queries.length} questions × ${s.runs} runs, ${set.corpus.length} documents)`,
      run: (ckpt, backend, hooks) => runResearch(ckpt, backend, set.index, set.queries, options, hooks),
      transcript: (record) => {
        const query = byId.get(record.query_id);
        if (!query) return undefined;
        const text = researchTranscript(researchTask(query.query, options.searchK), record.steps).replace(/\n## Thinking\n$/, '\n');
        return {
          instance: record.query_id,
          run: record.run,
          text: `${text}\n<!-- answer: ${JSON.stringify(record.answer)} · ${record.correct ? 'correct' : 'wrong'} · ${record.termination} -->\n`,
        };
      },
    };
  },
};
