/** `probe validate`: every rung and ASAP on every checkpoint, and each probe against each ground truth. */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { collectRuns } from '../src/report/collect.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { kendallTauB, spearman } from '../src/stats/correlation.ts';
import type { StudyOutcome } from '../src/validate/run.ts';
import { CODE_EXTENSIONS, splitAtLines } from '../src/probes/code-text.ts';
import { formatValue, heading } from '../src/validate/table.ts';
import { BEHAVIOUR_TRUTHS } from '../src/validate/series.ts';
import { CKPT, PROBE_BIN, tempDir } from './helpers/paths.ts';

type StudyDoc = Omit<StudyOutcome, 'rows' | 'failures'> & { results: StudyOutcome['rows'] };

describe('plain code as scoring pieces', () => {
  it('cuts at line ends into pieces within the byte limit that put the text back together, a longer line where a character ends', () => {
    const text = `def f(x):\n    return x + 1\n\n${'é'.repeat(30)}\nprint(f(2))\n`;
    const pieces = splitAtLines(text, 16);
    expect(pieces.join('')).toBe(text);
    for (const p of pieces) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(16);
    expect(pieces[0]).toBe('def f(x):\n');
    expect(pieces.some((p) => p === 'é'.repeat(8))).toBe(true);
  });
});

function codeBytes(dir: string): number {
  return readdirSync(dir).reduce((a, name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return a + codeBytes(path);
    return a + (CODE_EXTENSIONS.has(extname(name)) ? statSync(path).size : 0);
  }, 0);
}

describe.skipIf(skipWithoutBwrap)('probe validate', () => {
  it('reports each rung and ASAP on every checkpoint as the rungs computed them, correlations recomputable from the table, and resumes without recomputing', () => {
    const out = join(tempDir(), 'study');
    // Three items: the first two (api__pagination-5) have two near-miss distractors, too few for MCQ; the third is asked.
    const code = join(REPO_ROOT, 'verifiers', 'api__pagination-5');
    const args = [
      PROBE_BIN,
      'validate',
      '--ckpt',
      CKPT.prose,
      CKPT.code,
      CKPT.attention,
      '--probes',
      join(REPO_ROOT, 'probes', 'demo.jsonl'),
      '--limit',
      '3',
      '--code',
      code,
      '-n',
      '2',
      '--passk-max-tokens',
      '128',
      '--asap-runs',
      '1',
      '--asap-instances',
      '1',
      '--asap-max-steps',
      '2',
      '--asap-max-tokens',
      '128',
      '--resamples',
      '50',
      '--no-cache',
      '--out',
      out,
    ];
    const first = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
    expect(first.status, first.stderr).toBe(0);
    const doc = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as StudyDoc;
    const ckpts = [CKPT.prose, CKPT.code, CKPT.attention];
    expect(doc.results.map((r) => r.checkpoint)).toEqual(ckpts);

    // Every rung ran on every checkpoint (no shortlist), and each column is the rung's own figure.
    for (const rung of ['code_bpb', 'bpb', 'mcq', 'passk', 'asap'] as const)
      expect(doc.rungs[rung].map((r) => r.checkpoint)).toEqual(ckpts);
    doc.results.forEach((row, i) => {
      expect(row.probes.code_bpb).toBe(doc.rungs.code_bpb[i]!.bpb);
      expect(row.probes.bpb).toBe(doc.rungs.bpb[i]!.bpb);
      expect(row.probes['mcq.acc']).toBe(doc.rungs.mcq[i]!.acc);
      expect(row.probes['mcq.acc_norm']).toBe(doc.rungs.mcq[i]!.acc_norm);
      expect(row.probes['passk.pass@1']).toBe(doc.rungs.passk[i]!.pass_at['1']);
      expect(row.probes['passk.pass@2']).toBe(doc.rungs.passk[i]!.pass_at['2']);
      expect(row.truths['asap.pass@1']).toBe(doc.rungs.asap[i]!.pass_at['1']);
      for (const field of BEHAVIOUR_TRUTHS) expect(row.truths[`asap.${field}`], field).toBe(doc.rungs.asap[i]!.behaviour[field]);
    });
    // General code BPB scored every byte of the code given, once.
    expect(doc.code.bytes).toBe(codeBytes(code));
    for (const r of doc.rungs.code_bpb) expect(r.bytes).toBe(doc.code.bytes);
    // The byte-level prose model is the worst plain-code model of the three.
    expect(doc.probes.find((p) => p.name === 'code_bpb')!.ranking.at(-1)).toEqual([CKPT.prose]);

    // Each correlation is recomputable from the per-checkpoint values (oriented: lower BPB is better).
    expect(doc.correlations.length).toBeGreaterThan(0);
    for (const c of doc.correlations) {
      const sign = (name: string) => ([...doc.probes, ...doc.truths].find((s) => s.name === name)!.higher_is_better ? 1 : -1);
      const x = doc.correlated.map((ck) => sign(c.probe) * doc.results.find((r) => r.checkpoint === ck)!.probes[c.probe]!);
      const y = doc.correlated.map((ck) => sign(c.truth) * doc.results.find((r) => r.checkpoint === ck)!.truths[c.truth]!);
      // JSON writes an undefined correlation (a series tied on every checkpoint) as null.
      expect(c.spearman ?? NaN).toEqual(spearman(x, y));
      expect(c.kendall ?? NaN).toEqual(kendallTauB(x, y));
      if (Number.isFinite(c.spearman)) expect(c.spearman_ci_tasks.low).toBeLessThanOrEqual(c.spearman_ci_tasks.high);
    }

    // The readable table shows the same figures: each checkpoint's line holds its BPB and ASAP pass@1 as formatted.
    const line = (name: string, after: string) =>
      first.stderr
        .slice(first.stderr.indexOf(after))
        .split('\n')
        .find((l) => l.startsWith(name))!;
    for (const row of doc.results) {
      const name = row.checkpoint.split('/').pop()!;
      expect(line(name, 'Probes').split(/\s{2,}/)).toEqual([name, ...doc.probes.map((p) => formatValue(p.name, row.probes[p.name]))]);
      expect(line(name, 'Ground truth').split(/\s{2,}/)).toEqual([name, ...doc.truths.map((t) => formatValue(t.name, row.truths[t.name]))]);
    }
    expect(first.stderr).toContain(heading('asap.valid_tool_calls'));

    // Costs: one per rung and checkpoint, with the tokens each rung asked of the model.
    expect(doc.costs.map((c) => `${c.rung}:${c.checkpoint}`).sort()).toEqual(
      ['asap', 'bpb', 'code-bpb', 'mcq', 'passk'].flatMap((r) => ckpts.map((c) => `${r}:${c}`)).sort(),
    );
    for (const c of doc.costs) {
      if (['code-bpb', 'bpb', 'mcq'].includes(c.rung)) expect(c.tokens_scored, c.rung).toBeGreaterThan(0);
      if (['passk', 'asap'].includes(c.rung)) expect(c.tokens_sampled, c.rung).toBeGreaterThan(0);
    }

    // A rerun resumes: nothing is computed again, so the results — costs included — are those of the first run.
    const again = spawnSync(process.execPath, [...args, '--resume'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
    expect(again.status, again.stderr).toBe(0);
    const resumed = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as StudyDoc;
    expect(resumed.results).toEqual(doc.results);
    expect(resumed.correlations).toEqual(doc.correlations);
    expect(resumed.costs).toEqual(doc.costs);

    // `probe report` reads the study's run directory: each rung as its own verb would have written it.
    const report = collectRuns([out]);
    expect(report.bpb).toEqual(doc.rungs.bpb);
    expect(report.passk).toEqual(doc.rungs.passk);
    expect(report.asap.map((r) => r.pass_at)).toEqual(doc.rungs.asap.map((r) => r.pass_at));
  }, 300_000);
});
