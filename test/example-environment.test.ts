/**
 * The example environment of docs/architecture.md (test/fixtures/example-environment/) runs
 * through the one loop, the one recovery policy and the one run over instances, and its
 * declared columns are what `probe asap` prints: adding an environment takes nothing more.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { CKPT, tempDir } from './helpers/paths.ts';
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

/**
 * The claim itself: a copy of src/ with the example as src/calc/ and one line (and its import)
 * in src/environments/registry.ts is a probe whose `asap --env calc`, `screen --asap-env calc`
 * and `report` run it, with flags, checks, resume and columns from the declaration alone.
 */
describe('registered as one folder and one registry line (a copy of src/)', () => {
  const root = tempDir('probe-calc-');
  const questions = join(root, 'questions.jsonl');
  const run = (args: string[]) =>
    spawnSync(process.execPath, [join(root, 'bin', 'probe.js'), ...args], { cwd: root, encoding: 'utf8', timeout: 300_000 });

  beforeAll(() => {
    for (const entry of readdirSync(REPO_ROOT))
      if (!['src', 'bin', '.git'].includes(entry)) symlinkSync(join(REPO_ROOT, entry), join(root, entry));
    // Copied, not linked: node runs a linked bin from where the link leads, which would be this checkout's src/.
    for (const code of ['src', 'bin']) cpSync(join(REPO_ROOT, code), join(root, code), { recursive: true });
    mkdirSync(join(root, 'src', 'calc'));
    const example = readFileSync(join(REPO_ROOT, 'test', 'fixtures', 'example-environment', 'environment.ts'), 'utf8');
    writeFileSync(join(root, 'src', 'calc', 'environment.ts'), example.replaceAll("'../../../src/", "'../"));
    const registry = join(root, 'src', 'environments', 'registry.ts');
    const before = readFileSync(registry, 'utf8');
    const after = before
      .replace(
        'import { RESEARCH_ENVIRONMENT }',
        "import { CALC_ENVIRONMENT } from '../calc/environment.ts';\nimport { RESEARCH_ENVIRONMENT }",
      )
      .replace('  registered(RESEARCH_ENVIRONMENT),\n', '  registered(RESEARCH_ENVIRONMENT),\n  registered(CALC_ENVIRONMENT),\n');
    // The registry gained the import and the one line, nothing else.
    expect(after.split('\n').length - before.split('\n').length).toBe(2);
    writeFileSync(registry, after);
    writeFileSync(
      questions,
      ['{"id":"q1","text":"What is 12 * 7 + 3?","answer":87}', '{"id":"q2","text":"What is 9 + 10?","answer":19}'].join('\n'),
    );
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('probe asap --env calc: its flag in the help, its input checked, its run resumed, its columns in the table and the report', () => {
    const help = run(['asap', '--help']).stdout.replace(/\s+/g, ' ');
    expect(help).toContain('calc (arithmetic with a calculator, the answer decides) (choices: "swe", "terminal", "research", "calc"');
    expect(help).toContain('--calc-questions <file> with --env calc: arithmetic questions');

    const bad = join(root, 'bad.jsonl');
    writeFileSync(bad, '{"id":"q1","text":"1+1?","answer":2}\n{"id":"q2"}\n');
    const refused = run(['asap', '--env', 'calc', '--calc-questions', bad, '--ckpt', CKPT.agent]);
    expect(refused.status).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(`${bad}:2: field "text"`);

    const out = join(root, 'calc-run');
    const args = ['asap', '--env', 'calc', '--calc-questions', questions, '--ckpt', CKPT.agent, CKPT.attention];
    const settings = ['--runs', '2', '--max-steps', '3', '--max-tokens', '24', '--no-cache', '--out', out];
    const first = run([...args, ...settings, '--json']);
    expect(first.status, first.stderr).toBe(0);
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    expect(results.env).toBe('calc');
    expect(results.results.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([CKPT.agent, CKPT.attention]);
    expect(JSON.parse(first.stdout).results).toEqual(results.results);
    // Every episode is in the samples log and has its transcript.
    const lines = readFileSync(join(out, 'calc', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(lines).toHaveLength(2 * 2 * 2);
    expect(readdirSync(join(out, 'episodes'))).toHaveLength(2);

    // A rerun reads every episode back through the declared record schema: the same results, no new episode.
    const again = run([...args, ...settings, '--resume']);
    expect(again.status, again.stderr).toBe(0);
    expect(
      readFileSync(join(out, 'calc', 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n'),
    ).toHaveLength(8);
    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')).results).toEqual(results.results);
    expect(again.stderr).toMatch(/Arithmetic on 2 questions × 2 runs/);
    expect(again.stderr).toMatch(/checkpoint\s+pass@1\s+pass@2\s+∩@2\s+calculations/);

    // A planted record is refused by the declared schema, naming the log.
    const log = join(out, 'calc', 'samples.jsonl');
    const kept = readFileSync(log, 'utf8');
    writeFileSync(log, kept.replace('"calculations":', '"calculations":"many","was":'));
    const planted = run([...args, ...settings, '--resume']);
    expect(planted.status).toBe(2);
    expect(planted.stderr).toContain(log);
    writeFileSync(log, kept);
    const restored = run([...args, ...settings, '--resume']);
    expect(restored.status, restored.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')).results).toEqual(results.results);

    const report = run(['report', out, '--json']);
    expect(report.status, report.stderr).toBe(0);
    const summary = JSON.parse(report.stdout);
    expect(summary.calc.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([CKPT.agent, CKPT.attention]);
    expect(summary.calc[0].behaviour).toEqual(results.results[0].behaviour);
    const ranking = run(['report', out]);
    expect(ranking.stderr).toMatch(/Arithmetic\n\n\s*rank\s+checkpoint\s+pass@1\s+∩@n\s+calculations/);
  });

  it('probe screen --asap-env calc runs the shortlist in it, records its input, and shows its column', () => {
    const out = join(root, 'screen');
    const screen = run([
      'screen',
      '--ckpt',
      CKPT.agent,
      CKPT.attention,
      '--shortlist',
      '1',
      '-n',
      '1',
      '--passk-max-tokens',
      '16',
      '--asap-runs',
      '1',
      '--asap-max-steps',
      '2',
      '--asap-max-tokens',
      '24',
      '--asap-env',
      'calc',
      '--calc-questions',
      questions,
      '--no-cache',
      '--out',
      out,
    ]);
    expect(screen.status, screen.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')).config).toMatchObject({
      asap_envs: ['calc'],
      calc_questions: questions,
    });
    const rows = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')).results as Array<{ shortlisted: boolean; asap_envs?: object }>;
    expect(rows.filter((r) => r.asap_envs).length).toBe(1);
    expect(rows.find((r) => r.shortlisted)!.asap_envs).toHaveProperty('calc.pass_at_1');
    expect(screen.stderr).toMatch(/calc pass@1/);
    expect(existsSync(join(out, 'asap-calc', 'results.json'))).toBe(true);
    const report = run(['report', out, '--json']);
    expect(report.status, report.stderr).toBe(0);
    expect(JSON.parse(report.stdout).calc).toHaveLength(1);
  });
});
