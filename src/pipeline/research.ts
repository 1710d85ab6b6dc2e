/**
 * `probe asap --env research`: deep-research episodes of every checkpoint over a set in
 * BrowseComp-Plus's layout (a directory with corpus.jsonl and queries.jsonl), in a run
 * directory that a rerun with --resume continues episode by episode.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { BosPolicy } from '../backends/bos.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import { checkpointKey } from '../swe/store.ts';
import { InputError } from '../errors.ts';
import { type ResearchDoc, type ResearchQuery, loadCorpus, loadQueries } from '../research/corpus.ts';
import { researchTranscript, researchTask } from '../research/episode.ts';
import { type ResearchEpisodeRecord, type ResearchResult, type ResearchRunOptions, runResearch } from '../research/run.ts';
import { ResearchIndex } from '../research/search-index.ts';
import { readJsonl } from '../store/jsonl-log.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { checkpointRecords, probeSetRecord, RunDir, type SampleLine } from '../store/run-dir.ts';
import { type Failure, forEachCheckpoint, itemHooks, servingConfig, settingsRunDir } from './checkpoint-loop.ts';
import { idFileName } from '../util/file-name.ts';

/** The episodes' settings (research/run.ts), and where the run is and how its checkpoints are served. */
export interface ResearchRunSettings extends ResearchRunOptions {
  /** A directory holding corpus.jsonl and queries.jsonl. */
  set: string;
  http?: HttpBackendOptions;
  cache?: ResultCache | undefined;
  dtype?: Dtype | undefined;
  /** What ran each Hugging Face directory (`--engine`): recorded in the run's settings. */
  engine?: EngineChoice | undefined;
  bos?: BosPolicy | undefined;
  out?: string | undefined;
  resume: boolean;
  quiet: boolean;
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
  // What defines the episodes: a rerun must match it to resume (checkpoints may be added).
  const config = {
    env: 'research',
    set: resolve(s.set),
    runs: s.runs,
    max_steps: s.maxSteps,
    max_tokens: s.maxTokens,
    temperature: s.temperature,
    top_p: s.topP,
    search_k: s.searchK,
    ...servingConfig(s),
  };
  const out = s.out ?? settingsRunDir('research', config);
  const dir = RunDir.open(
    out,
    {
      verb: 'asap',
      config,
      checkpoints: checkpointRecords(checkpoints),
      probe_set: probeSetRecord(resolve(s.set), set.queries),
      seeds: { episodes: s.seed },
    },
    { resume: s.resume },
  );
  if (!s.quiet)
    process.stderr.write(
      `${dir.status === 'resumed' ? 'Resuming' : 'Writing'} the deep-research run in ${out} (${set.queries.length} questions × ${s.runs} runs, ${set.corpus.length} documents)\n`,
    );
  const { results, failures } = await forEachCheckpoint(
    checkpoints,
    {
      units: set.queries.length * s.runs,
      quiet: s.quiet,
      http: s.http,
      cache: s.cache,
      dtype: s.dtype,
      label: 'research',
      bos: s.bos,
      dir,
    },
    (ckpt, backend, tick) =>
      runResearch(ckpt, backend, set.index, set.queries, s, itemHooks<ResearchEpisodeRecord>(dir, 'research', ckpt, tick)),
  );
  writeTranscripts(dir, set, checkpoints, s.searchK);
  const resultsFile = dir.writeResults({ env: 'research', settings: config, results });
  return { out, resultsFile, results, failures };
}

/** Every finished episode as the model saw it, one Markdown file each (episodes/<checkpoint>/<query>/run-<n>.md). */
function writeTranscripts(dir: RunDir, set: ResearchSet, checkpoints: readonly Checkpoint[], searchK: number): void {
  const byId = new Map(set.queries.map((q) => [q.query_id, q]));
  const nameOf = new Map(checkpoints.map((c) => [c.key, c.name]));
  for (const { checkpoint, result } of readJsonl<SampleLine<ResearchEpisodeRecord>>(dir.samplesFile('research'), dir.dir)) {
    const query = byId.get(result.query_id);
    if (!query) continue;
    const text = researchTranscript(researchTask(query.query, searchK), result.steps).replace(/\n## Thinking\n$/, '\n');
    const name = nameOf.get(checkpoint);
    if (name === undefined) continue; // a checkpoint of an earlier invocation of the run: its transcripts are written already
    // Laid out as SWE episodes are (swe/store.ts): the checkpoint as given, the question, the run.
    const file = join(dir.dir, 'episodes', checkpointKey(name), idFileName(result.query_id), `run-${result.run}.md`);
    // Written by a rename: a link planted at a transcript's name in a resumed run is replaced, never written through.
    writeFileAtomic(
      file,
      `${text}\n<!-- answer: ${JSON.stringify(result.answer)} · ${result.correct ? 'correct' : 'wrong'} · ${result.termination} -->\n`,
    );
  }
}
