/**
 * The example environment of docs/architecture.md (test/fixtures/example-environment/) runs
 * through the one loop, the one recovery policy and the one run over instances, and its
 * declared columns are what `probe asap` prints: adding an environment takes nothing more.
 */
import { describe, expect, it, vi } from 'vitest';
import { runEpisodeLoop } from '../src/asap/loop.ts';
import { printEpisodesTable } from '../src/cli/episodes-table.ts';
import { CALC_ENVIRONMENT, calcEpisode, findCalcAction, runCalc } from './fixtures/example-environment/environment.ts';
import { ScriptedBackend } from './helpers/scripted-backend.ts';

const question = { id: 'q1', text: 'What is 12 * 7 + 3?', answer: 87 };
const settings = { maxSteps: 4, maxTokens: 64, temperature: 0, topP: 1, seed: 0 };

describe('an environment added as one folder: arithmetic with a <calc> tool', () => {
  it('runs an episode: the tool observes, the answer ends it, and the prompt carries the transcript', async () => {
    const backend = new ScriptedBackend(['Multiply first. <calc>12 * 7 + 3</calc>', 'So <answer>87</answer>']);
    const { steps, termination } = await runEpisodeLoop(calcEpisode(question), backend, settings);
    expect(termination).toBe('answered');
    expect(steps.map((s) => [s.outcome, s.observation])).toEqual([
      ['executed', '87'],
      ['answered', null],
    ]);
    expect(backend.prompts[1]).toContain('<calc>12 * 7 + 3</calc>\nObservation: 87\n');
  });

  it('gets the shared recovery: an answer before acting is rejected once, a second format error ends the episode', async () => {
    const early = await runEpisodeLoop(
      calcEpisode(question),
      new ScriptedBackend(['<answer>80</answer>', '<answer>80</answer>']),
      settings,
    );
    expect(early.steps.map((s) => s.outcome)).toEqual(['answer_rejected', 'answered_uncalculated']);
    const garbled = await runEpisodeLoop(calcEpisode(question), new ScriptedBackend(['I think…', 'still thinking']), settings);
    expect(garbled.termination).toBe('format_error');
    expect(garbled.steps.map((s) => s.outcome)).toEqual(['format_error', 'format_ended']);
    const looping = await runEpisodeLoop(calcEpisode(question), new ScriptedBackend(Array(3).fill('<calc>1+1</calc>')), settings);
    expect(looping.steps.map((s) => s.outcome)).toEqual(['executed', 'repeat_suppressed', 'repeated_action']);
  });

  it('refuses to run what is not arithmetic (the tool never evaluates text)', async () => {
    const found = findCalcAction('<calc>process.exit(1)</calc>');
    expect(found.ok).toBe(true);
    const { steps } = await runEpisodeLoop(
      calcEpisode(question),
      new ScriptedBackend(['<calc>process.exit(1)</calc>', '<answer>1</answer>']),
      settings,
    );
    expect(steps[0]!.observation).toMatch(/^cannot calculate/);
  });

  it('scores pass@k over runs and prints its declared columns in probe asap’s table', async () => {
    // Two runs: the first solves it, the second answers wrong; the memo-less run goes in job order.
    const backend = new ScriptedBackend(['<calc>12*7+3</calc>', '<answer>87</answer>', '<calc>12*7</calc>', '<answer>84</answer>']);
    const result = await runCalc('scripted', backend, [question], 2);
    expect(result.pass_at).toEqual({ '1': 0.5, '2': 1 });
    expect(result.intersection).toBe(0);
    expect(result.terminations).toMatchObject({ answered: 2, step_limit: 0 });
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((text) => written.push(String(text)) > 0);
    try {
      printEpisodesTable(CALC_ENVIRONMENT, [result], 2, 'Arithmetic on 1 question × 2 runs');
    } finally {
      spy.mockRestore();
    }
    const table = written.join('');
    expect(table).toContain('Arithmetic on 1 question × 2 runs');
    expect(table).toMatch(/checkpoint\s+pass@1\s+pass@2\s+∩@2\s+calculations/);
    expect(table).toMatch(/scripted\s+50\.0%\s+100\.0%\s+0\.0%\s+1\.0/);
  });
});
