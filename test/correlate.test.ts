/** `probe correlate` on real `--json` outputs. */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { spearman } from '../src/stats/correlation.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('probe correlate', () => {
  const dir = tempDir();
  const bpbFile = join(dir, 'bpb.json');
  const bpb = probe(['bpb', '--json']);
  writeFileSync(bpbFile, bpb.stdout);
  const doc = JSON.parse(bpb.stdout) as { results: Array<{ checkpoint: string; bpb: number }> };

  it('correlates each metric with the downstream scores, with bootstrap intervals and a warning below 5 checkpoints', () => {
    const scores = join(dir, 'scores.csv');
    const downstream: Record<string, number> = { 'ngram-prose': 0.02, 'ngram-code': 0.04, 'ngram-agent': 0.09, 'attn-agent': 0.08 };
    writeFileSync(
      scores,
      `checkpoint,pass@1\n${Object.entries(downstream)
        .map(([k, v]) => `${k},${v}`)
        .join('\n')}\n`,
    );
    const run = probe(['correlate', '--results', bpbFile, '--scores', scores, '--resamples', '300', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as {
      correlations: Array<{ metric: string; checkpoints: number; spearman: number; spearman_ci_items: { low: number; high: number } }>;
      warning: string | null;
    };
    const row = out.correlations.find((r) => r.metric === 'bpb')!;
    expect(row.checkpoints).toBe(4);
    // Only checkpoints with a downstream score take part (the contaminated control has none).
    const scored = doc.results.filter((r) => r.checkpoint.split('/').pop()! in downstream);
    const x = scored.map((r) => r.bpb);
    const y = scored.map((r) => downstream[r.checkpoint.split('/').pop()!]!);
    expect(row.spearman).toBeCloseTo(spearman(x, y), 12);
    expect(row.spearman_ci_items.low).toBeLessThanOrEqual(row.spearman_ci_items.high);
    expect(out.warning).toMatch(/fewer than 5 checkpoints/);
  });

  it('names the file and line of a bad score row', () => {
    const scores = join(dir, 'bad.csv');
    writeFileSync(scores, 'checkpoint,score\nngram-prose,0.1\nngram-code\n');
    const run = probe(['correlate', '--results', bpbFile, '--scores', scores]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${scores}:3:`);
  });
});
