/** Deep research (issue 17, part 3): the corpus and query layout, the BM25 search tool, the actions, and grading. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_RESEARCH_SET } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { findResearchAction, type ResearchAction, renderResearchAction, researchObservation } from '../src/research/actions.ts';
import { loadCorpus, loadQueries } from '../src/research/corpus.ts';
import {
  decideResearch,
  RESEARCH_TERMINATIONS,
  type ResearchStep,
  researchBehaviour,
  researchTask,
  researchTranscript,
  runResearchEpisode,
} from '../src/research/episode.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { CompletionBackend } from '../src/backends/types.ts';
import { runResearch } from '../src/research/run.ts';
import { gradeAnswer, normalizeAnswer } from '../src/research/grade.ts';
import { PAGE_CHARS, ResearchIndex } from '../src/research/search-index.ts';
import { CKPT, tempDir } from './helpers/paths.ts';
import { memorisingControl } from './helpers/control.ts';
import { metricsFromDocument } from '../src/stats/metrics.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { checkpointKey } from '../src/swe/store.ts';

const SET = EMBEDDED_RESEARCH_SET;
const corpus = loadCorpus(join(SET, 'corpus.jsonl'));
const queries = loadQueries(join(SET, 'queries.jsonl'), corpus);
const index = new ResearchIndex(corpus);

describe('the shipped license set', () => {
  it('reads as BrowseComp-Plus lays it out, every gold document in the corpus', () => {
    expect(corpus).toHaveLength(173);
    expect(queries).toHaveLength(13);
    for (const q of queries) {
      expect(q.gold_docs.length, q.query_id).toBeGreaterThan(0);
      expect(q.gold_docs.every((d) => index.has(d))).toBe(true);
      // The gold passage states the answer (or an accepted spelling of it).
      const gold = corpus.find((d) => d.docid === q.gold_docs[0])!.text;
      expect(
        [q.answer, ...q.aliases].some((a) => normalizeAnswer(gold).includes(normalizeAnswer(a))),
        q.query_id,
      ).toBe(true);
    }
  });

  it('is searchable but not trivially: the question as query finds the gold passage first for 9 of 13, in the top 5 for 12', () => {
    const ranks = queries.map((q) => index.search(q.query, 5).findIndex((h) => h.docid === q.gold_docs[0]));
    expect(ranks.filter((r) => r === 0)).toHaveLength(9);
    expect(ranks.filter((r) => r >= 0)).toHaveLength(12);
  });
});

describe('the search tool (BM25)', () => {
  const tiny = new ResearchIndex([
    { docid: 'a', title: 'Apples', text: 'apple apple apple orchard' },
    { docid: 'b', title: 'Fruit', text: 'apple banana cherry and a great many other words that make this document long' },
    { docid: 'c', title: 'Boats', text: 'sails and hulls' },
  ]);

  it('ranks by term frequency and length, leaves out documents without the terms, and ties by id', () => {
    expect(tiny.search('apple').map((h) => h.docid)).toEqual(['a', 'b']);
    expect(tiny.search('hulls')[0]).toMatchObject({ docid: 'c', title: 'Boats', snippet: 'sails and hulls' });
    expect(tiny.search('zeppelin')).toEqual([]);
  });

  it('reads a long document a page at a time, and refuses a page or document that is not there', () => {
    const long = new ResearchIndex([{ docid: 'long', text: 'x'.repeat(PAGE_CHARS * 2 + 10) }]);
    expect(long.open('long', 3)).toMatchObject({ page: 3, pages: 3, text: 'x'.repeat(10) });
    expect(long.open('long', 4)).toBeUndefined();
    expect(researchObservation(long, { kind: 'open', docid: 'long', page: 1 })).toContain('<open doc="long" page="2"/> reads on');
    expect(researchObservation(long, { kind: 'open', docid: 'long', page: 9 })).toBe('Document long has no page 9.');
    expect(researchObservation(long, { kind: 'open', docid: 'nope', page: 1 })).toMatch(/^No document "nope"/);
  });
});

describe('research actions', () => {
  it('finds the first action after free thinking, and renders what it parses', () => {
    const cases: Array<[string, ResearchAction]> = [
      ['I should look it up.\n<search>Santa Clara venue</search> and more', { kind: 'search', query: 'Santa Clara venue' }],
      ['<open doc="mpl-1.1-25" page="2"/>', { kind: 'open', docid: 'mpl-1.1-25', page: 2 }],
      ['It says so.\n<answer>Santa Clara County</answer>', { kind: 'answer', text: 'Santa Clara County' }],
    ];
    for (const [text, action] of cases) {
      const found = findResearchAction(text);
      expect(found).toMatchObject({ ok: true, action });
      expect(findResearchAction(renderResearchAction(action))).toMatchObject({ ok: true, action });
    }
    expect(findResearchAction('Thinking. <search>a</search>')).toMatchObject({ ok: true, thought: 'Thinking.', end: 28 });
  });

  it('tells an unfinished action (sampling may go on) from a wrong one', () => {
    expect(findResearchAction('just prose')).toMatchObject({ ok: false, complete: false });
    expect(findResearchAction('<search>half a que')).toMatchObject({ ok: false, complete: false });
    expect(findResearchAction('<search> </search>')).toMatchObject({ ok: false, complete: true, error: '<search> is empty' });
    expect(findResearchAction('<open page="2"/>')).toMatchObject({ ok: false, complete: true, error: 'open needs doc="ID"' });
    expect(findResearchAction('<open doc="x" page="0"/>')).toMatchObject({ ok: false, complete: true });
  });
});

describe('grading', () => {
  const q = { answer: 'Santa Clara County', aliases: ['Santa Clara'] };
  it('accepts the answer and its aliases up to case, punctuation, articles and spacing; nothing else', () => {
    expect(gradeAnswer('  santa clara county. ', q)).toEqual({ correct: true, matched: 'Santa Clara County' });
    expect(gradeAnswer('Santa-Clara', q)).toEqual({ correct: true, matched: 'Santa Clara' });
    expect(gradeAnswer('The Santa Clara County', q).correct).toBe(true);
    expect(gradeAnswer('San Mateo County', q).correct).toBe(false);
    expect(gradeAnswer('', { answer: '!', aliases: [] }).correct).toBe(false);
  });
});

describe('bad input names file, line and field', () => {
  it('a duplicate document id, and a gold document missing from the corpus', () => {
    const dir = tempDir();
    const docs = join(dir, 'corpus.jsonl');
    writeFileSync(docs, '{"docid":"a","text":"x"}\n\n{"docid":"a","text":"y"}\n');
    expect(() => loadCorpus(docs)).toThrow(/corpus\.jsonl:3: field "docid": "a" appears twice/);
    const qs = join(dir, 'queries.jsonl');
    writeFileSync(qs, '{"query_id":"q1","query":"?","answer":"x","gold_docs":[{"docid":"b"}]}\n');
    try {
      loadQueries(qs, [{ docid: 'a', text: 'x' }]);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).message).toMatch(/queries\.jsonl:1: field "gold_docs": document "b" is not in the corpus \(query q1\)/);
    }
    writeFileSync(qs, '{"query_id":"q1","answer":"x"}\n');
    expect(() => loadQueries(qs, [])).toThrow(/queries\.jsonl:1: field "query"/);
  });
});

describe('the research episode', () => {
  const step = (action: ResearchAction | null, outcome: ResearchStep['outcome']): ResearchStep => ({
    index: 0,
    completion: '',
    finish: 'action',
    tokens: 0,
    action,
    error: null,
    outcome,
    observation: '',
    modelMs: 0,
  });
  const found = (action: ResearchAction) => ({ ok: true as const, action, thought: '', end: 0 });
  const search: ResearchAction = { kind: 'search', query: 'venue' };
  const answer: ResearchAction = { kind: 'answer', text: 'x' };

  it('recovers once per failure kind: a format error, an answer before any search, a repeated action', () => {
    const bad = { ok: false as const, complete: true, error: 'no action element' };
    expect(decideResearch([], bad)).toMatchObject({ kind: 'hint', outcome: 'format_error' });
    expect(decideResearch([step(null, 'format_error')], bad)).toMatchObject({ kind: 'end', termination: 'format_error' });
    expect(decideResearch([], found(answer))).toMatchObject({ kind: 'hint', outcome: 'answer_rejected' });
    expect(decideResearch([step(answer, 'answer_rejected')], found(answer))).toMatchObject({
      kind: 'end',
      termination: 'answered_unsearched',
    });
    expect(decideResearch([step(search, 'executed')], found(answer))).toMatchObject({ kind: 'end', termination: 'answered' });
    expect(decideResearch([step(search, 'executed')], found(search))).toMatchObject({ kind: 'hint', outcome: 'repeat_suppressed' });
    expect(decideResearch([step(search, 'executed'), step(search, 'repeat_suppressed')], found(search))).toMatchObject({
      kind: 'end',
      termination: 'repeated_action',
    });
    expect(decideResearch([step(search, 'executed')], found({ kind: 'open', docid: 'a', page: 1 }))).toMatchObject({ kind: 'execute' });
  });

  it('reads behaviour from the steps: searches, documents opened, whether the gold passage was opened or shown', () => {
    const q = queries.find((x) => x.query_id === 'licenses-08')!;
    const steps = [
      step({ kind: 'search', query: 'Santa Clara County venue' }, 'executed'),
      step({ kind: 'open', docid: q.gold_docs[0]!, page: 1 }, 'executed'),
      step({ kind: 'answer', text: 'Santa Clara County' }, 'answered'),
    ];
    expect(researchBehaviour(steps, q)).toEqual({
      searches: 1,
      documents_opened: 1,
      gold_opened: true,
      gold_seen: true,
      answered: true,
      parsable_turns: 1,
    });
  });

  it('runs on a real checkpoint: the transcript is the md+xml task and steps, and a rerun with the seed is the same episode', async () => {
    const backend = await OnnxBackend.open(CKPT.attention);
    try {
      const settings = { maxSteps: 4, maxTokens: 48, temperature: 0.7, topP: 0.95, seed: 3, searchK: 5 };
      const first = await runResearchEpisode(backend, index, queries[0]!, settings);
      const again = await runResearchEpisode(backend, index, queries[0]!, settings);
      const untimed = (r: typeof first) => ({ ...r, steps: r.steps.map(({ modelMs: _ms, ...rest }) => rest) });
      expect(untimed(again)).toEqual(untimed(first));
      expect(first.steps.length).toBeGreaterThan(0);
      expect(first.steps.length).toBeLessThanOrEqual(4);
      expect(RESEARCH_TERMINATIONS).toContain(first.termination);
      const prompt = researchTranscript(researchTask(queries[0]!.query, 5), first.steps.slice(0, 1));
      expect(prompt).toMatch(
        /^# Task\n<task>\nAnswer the question below[\s\S]*Question: Which version of the GNU General Public License[\s\S]*<\/task>\n\n## Thinking\n/,
      );
      expect(prompt.endsWith('\n## Thinking\n')).toBe(true);
    } finally {
      await backend.close();
    }
  }, 120_000);
});

describe('probe asap --env research', () => {
  it('runs the shipped set on real checkpoints, refuses its run directory without --resume, and resumes to the same results', () => {
    const out = join(tempDir(), 'research-run');
    const args = ['asap', '--env', 'research', '--ckpt', CKPT.attention, CKPT.agent, '--runs', '2', '--limit', '2'];
    const common = [...args, '--max-steps', '4', '--max-tokens', '48', '--no-cache', '--json', '--out', out];
    const first = runProbe(common);
    expect(first.code, first.stderr).toBe(0);
    const { results } = JSON.parse(first.stdout);
    expect(results.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([CKPT.attention, CKPT.agent]);
    for (const r of results) {
      expect(r).toMatchObject({ env: 'research', runs: 2, queries: 2 });
      expect(Object.keys(r.pass_at)).toEqual(['1', '2']);
      expect(Object.values(r.terminations).reduce((a: number, b) => a + (b as number), 0)).toBe(4);
    }
    expectOneLineError(runProbe(common), /run\.json: this directory already holds a run: pass --resume/);
    const resumed = runProbe([...common, '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).results).toEqual(results);
    expect(readFileSync(join(out, 'episodes', checkpointKey(CKPT.agent), 'licenses-02', 'run-1.md'), 'utf8')).toContain('Question: ');
    // probe report reads it as deep research, not as SWE episodes, into its JSON and HTML.
    const html = join(out, 'report.html');
    const report = runProbe(['report', out, '--json', '--html', html]);
    expect(report.code, report.stderr).toBe(0);
    expect(JSON.parse(report.stdout).research.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([CKPT.attention, CKPT.agent]);
    expect(readFileSync(html, 'utf8')).toContain('Deep-research episodes');
  }, 300_000);

  it('names the set directory when it holds no corpus', () => {
    expectOneLineError(
      runProbe(['asap', '--env', 'research', '--research-set', tempDir(), '--ckpt', CKPT.agent]),
      /field "--research-set": no corpus\.jsonl here/,
    );
  });
});

describe('runResearch: what a solved episode counts for (a scripted model: the harness, not a model, is under test)', () => {
  /** Answers each step with the next line of its script, cut at the first stop string as a server cuts it. */
  const scripted = (script: string[]): CompletionBackend => ({
    id: 'scripted',
    encode: (text) => [...new TextEncoder().encode(text)],
    score: async () => [],
    close: async () => {},
    sample: async (requests) =>
      requests.map((r) => {
        const step = r.prompt.split('\n## Thinking\n').length - 2;
        const text = script[Math.min(step, script.length - 1)]!;
        const at = r.stop
          .map((s) => [text.indexOf(s), s] as const)
          .filter(([i]) => i >= 0)
          .sort((a, b) => a[0] - b[0])[0];
        return [
          at
            ? { text: text.slice(0, at[0]), tokens: [1], logprob: 0, finishReason: 'stop' as const, stop: at[1], truncated: false }
            : { text, tokens: [1], logprob: 0, finishReason: 'eos' as const, truncated: false },
        ];
      }),
  });
  const query = queries.find((q) => q.query_id === 'licenses-08')!;
  const options = { runs: 2, seed: 0, concurrency: 1, maxSteps: 6, maxTokens: 64, temperature: 0.7, topP: 0.95, searchK: 5 };

  it('search, open the gold passage, answer right: pass@1 = ∩@2 = 100%, and the behaviour says how', async () => {
    const backend = scripted([
      'Find the venue clause.\n<search>venue Santa Clara County</search>',
      `Read it.\n<open doc="${query.gold_docs[0]}"/>`,
      'It says Santa Clara County.\n<answer>Santa Clara County</answer>',
    ]);
    const result = await runResearch('scripted', backend, index, [query], options);
    expect(result).toMatchObject({ pass_at: { '1': 1, '2': 1 }, intersection: 1, terminations: { answered: 2 } });
    expect(result.behaviour).toMatchObject({
      searches: 1,
      documents_opened: 1,
      gold_opened: 1,
      gold_seen: 1,
      answered: 1,
      parsable_turns: 1,
      mean_turns: 3,
    });
  });

  it('a wrong answer, and an answer before any search (hinted once, then taken as given), count as they are', async () => {
    const wrong = await runResearch(
      'scripted',
      scripted(['<search>venue</search>', '<answer>San Mateo</answer>']),
      index,
      [query],
      options,
    );
    expect(wrong).toMatchObject({ pass_at: { '1': 0 }, intersection: 0, terminations: { answered: 2 } });
    const unsearched = await runResearch('scripted', scripted(['<answer>Santa Clara</answer>']), index, [query], options);
    expect(unsearched).toMatchObject({ pass_at: { '1': 1 }, terminations: { answered_unsearched: 2 } });
    expect(unsearched.behaviour).toMatchObject({ searches: 0, answered: 1, mean_turns: 2 });
  });
});

describe('a control that memorised the gold steps (a real n-gram checkpoint with a copy memory, as contaminated-agent is)', () => {
  it('searches, opens the gold passage and answers most questions right, where a rung that never read research transcripts answers none', async () => {
    const step = (i: number, thought: string, action: ResearchAction): ResearchStep => ({
      index: i,
      completion: `${thought}\n${renderResearchAction(action)}`,
      finish: 'action',
      tokens: 0,
      action,
      error: null,
      outcome: action.kind === 'answer' ? 'answered' : 'executed',
      observation: action.kind === 'answer' ? null : researchObservation(index, action, 5),
      modelMs: 0,
    });
    // What it memorised: each gold step after the exact transcript before it.
    const golds = queries.flatMap((q) => {
      const steps = [
        step(0, 'Search the documents for the question.', { kind: 'search', query: q.query }),
        step(1, 'Read the passage that states it.', { kind: 'open', docid: q.gold_docs[0]!, page: 1 }),
        step(2, 'The passage gives the answer.', { kind: 'answer', text: q.answer }),
      ];
      return steps.map((s, i) => ({
        context: researchTranscript(researchTask(q.query, 5), steps.slice(0, i)),
        gold: s.completion,
      }));
    });
    const dir = memorisingControl('research-control', 'memorised the gold research steps', golds);
    const options = { runs: 1, seed: 0, concurrency: 1, maxSteps: 6, maxTokens: 512, temperature: 0.7, topP: 0.95, searchK: 5 };
    const run = async (ckpt: string, maxTokens: number) => {
      const backend = await OnnxBackend.open(ckpt);
      try {
        return await runResearch(ckpt, backend, index, queries, { ...options, maxTokens });
      } finally {
        await backend.close();
      }
    };
    const control = await run(dir, 512);
    expect(control.pass_at['1']).toBeGreaterThanOrEqual(0.75);
    expect(control.terminations.answered).toBe(13);
    expect(control.behaviour).toMatchObject({ searches: 1, documents_opened: 1, answered: 1, parsable_turns: 1 });
    expect(control.behaviour.gold_opened).toBeGreaterThanOrEqual(0.75);
    const rung = await run(CKPT.attention, 64);
    expect(rung.pass_at['1']).toBe(0);
  }, 120_000);
});

describe('probe correlate', () => {
  it('reads a deep-research results file as research.pass@k, apart from prefix pass@K', () => {
    const series = metricsFromDocument({
      env: 'research',
      results: [{ checkpoint: 'a', env: 'research', pass_at: { '1': 0.5, '2': 0.75 }, items: [{ query_id: 'q', n: 2, c: 1 }] }],
    });
    expect(series.map((s) => s.name)).toEqual(['research.pass@1', 'research.pass@2']);
    expect(series[0]!.aggregate(series[0]!.items.get('a')!)).toBe(0.5);
  });
});
