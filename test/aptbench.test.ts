/** APTBench-format items: the shipped samples run, and each scoring rule is checked. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { choiceLetters, fillTemplate, kindOf, loadAptItems, rougeL, scoreAptbench } from '../src/probes/aptbench.ts';
import { CKPT } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';

describe('APTBench scoring rules', () => {
  it('ROUGE-L is the LCS F-measure over tokens', () => {
    expect(rougeL('pip install -r requirements.txt', 'pip install -r requirements.txt')).toBe(1);
    // LCS("pip install torch", "pip install -r torch") = 3 → P = 3/3, R = 3/4 → F = 6/7
    expect(rougeL('pip install torch', 'pip install -r torch')).toBeCloseTo(6 / 7, 12);
    expect(rougeL('', 'x')).toBe(0);
    expect(rougeL('a b', 'c d')).toBe(0);
  });
  it('finds the offered letters and the item kind', () => {
    expect(choiceLetters('(A) x\n(B) y\n(C) z(D) not a choice')).toEqual(['A', 'B', 'C']);
    expect(kindOf({ choices: '(A) x', answer: 'A' })).toBe('choice');
    expect(kindOf({ target_cmd: 'ls' })).toBe('completion');
    expect(kindOf({ target: 'some text' })).toBe('free-text');
  });
  it('fills $FIELD$ placeholders and names a missing field', () => {
    expect(fillTemplate('Issue: $ISSUE$ / $CHOICES$', { issue_statement: 'bug', choices: '(A) a' }, 'f')).toBe('Issue: bug / (A) a');
    expect(() => fillTemplate('$EXE_PLAN$', { uuid: 'u1' }, 'items.jsonl')).toThrow(/items.jsonl: field "execution_plan"/);
  });
});

describe.skipIf(!hasRealData)('the shipped APTBench samples', () => {
  let backend: OnnxBackend;
  beforeAll(async () => {
    backend = await OnnxBackend.open(CKPT.agent);
  });
  afterAll(async () => {
    await backend.close();
  });

  it('issue_fix/locate: letters by generation and by likelihood', async () => {
    const items = loadAptItems(real('aptbench/issue_fix_locate/items.jsonl')).slice(0, 3);
    const template = readFileSync(real('aptbench/issue_fix_locate/prompt_3shot.txt'), 'utf8');
    const result = await scoreAptbench('agent', backend, items, template, 'items');
    expect(result.items.map((i) => i.kind)).toEqual(['choice', 'choice', 'choice']);
    for (const [k, r] of result.items.entries()) {
      expect(choiceLetters(String(items[k]!.choices))).toContain(r.likelihood_answer);
      expect(r.likelihood_correct).toBe(r.likelihood_answer === items[k]!.answer);
      expect(r.correct).toBe(r.answer === items[k]!.answer);
    }
    // With the answer set to the model's own likelihood pick, the likelihood rule must agree.
    const rigged = items.map((item, k) => ({ ...item, answer: result.items[k]!.likelihood_answer }));
    expect((await scoreAptbench('agent', backend, rigged, template, 'items')).likelihood_acc).toBe(1);
  });

  it('env_setup/action: exact match of the first generated line', async () => {
    const items = loadAptItems(real('aptbench/env_setup_action/items.jsonl')).slice(0, 3);
    const template = readFileSync(real('aptbench/env_setup_action/prompt_3shot.txt'), 'utf8');
    const result = await scoreAptbench('agent', backend, items, template, 'items');
    for (const [k, r] of result.items.entries()) {
      expect(r.kind).toBe('completion');
      expect(r.answer).toBe(r.generated.split('\n')[0]!.trim());
      expect(r.correct).toBe(r.answer === String(items[k]!.target_cmd));
    }
    const rigged = items.map((item, k) => ({ ...item, target_cmd: result.items[k]!.answer }));
    const again = await scoreAptbench('agent', backend, rigged, template, 'items');
    expect(again.exact_match).toBe(1);
    for (const i of again.items) expect(i.rouge_l).toBe(i.answer ? 1 : 0);
  });
});

describe.skipIf(!hasRealData)('probe aptbench (command line)', () => {
  it('runs the shipped samples, prints the documented JSON, keeps a run directory and reports it', async () => {
    const { spawnSync } = await import('node:child_process');
    const { PROBE_BIN, tempDir } = await import('./helpers/paths.ts');
    const out = join(tempDir(), 'apt');
    const probe = (args: string[]) => spawnSync(process.execPath, [PROBE_BIN, ...args], { encoding: 'utf8', timeout: 120_000 });
    const run = probe([
      'aptbench',
      '--items',
      real('aptbench/env_setup_action/items.jsonl'),
      '--prompt',
      real('aptbench/env_setup_action/prompt_3shot.txt'),
      '--ckpt',
      CKPT.agent,
      '--limit',
      '2',
      '--out',
      out,
      '--json',
    ]);
    expect(run.status, run.stderr).toBe(0);
    const doc = JSON.parse(run.stdout) as { results: Array<{ checkpoint: string; exact_match: number; items: unknown[] }> };
    expect(doc.results).toHaveLength(1);
    expect(doc.results[0]!.items).toHaveLength(2);
    expect(typeof doc.results[0]!.exact_match).toBe('number');
    expect(
      readFileSync(join(out, 'aptbench', 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n'),
    ).toHaveLength(2);
    expect(JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'))).toEqual(doc);
    const html = join(out, 'report.html');
    const report = probe(['report', out, '--html', html]);
    expect(report.status, report.stderr).toBe(0);
    expect(readFileSync(html, 'utf8')).toMatch(/<section id="aptbench">.*ngram-agent/s);
  });
});
