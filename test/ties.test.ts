/** Ties shown as ties: places shared (1, 2=, 2=, 4), chains written a = b, and the CLI tables and report that use them. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectRuns } from '../src/report/collect.ts';
import { renderReport } from '../src/report/html.ts';
import { rankedWithTies, tiedChain, tiedGroups } from '../src/stats/ties.ts';
import { runProbe } from './helpers/cli.ts';
import { CKPT, copyCheckpoint, DEMO_PROBES, tempDir } from './helpers/paths.ts';

describe('ties', () => {
  const score = (x: { s: number | undefined }) => x.s;
  const items = [
    { n: 'a', s: 0.3 },
    { n: 'b', s: 0.5 },
    { n: 'c', s: 0.3 },
    { n: 'd', s: undefined },
    { n: 'e', s: 0.3 },
    { n: 'f', s: 0.1 },
  ];

  it('places a tie together and skips the places it spans (competition ranking); no score comes last', () => {
    expect(rankedWithTies(items, score, 'higher').map(({ item, rank }) => `${rank}:${item.n}`)).toEqual([
      '1:b',
      '2=:a',
      '2=:c',
      '2=:e',
      '5:f',
      '6:d',
    ]);
    expect(rankedWithTies(items, score, 'lower').map(({ item, rank }) => `${rank}:${item.n}`)).toEqual([
      '1:f',
      '2=:a',
      '2=:c',
      '2=:e',
      '5:b',
      '6:d',
    ]);
  });

  it('writes a chain with = for ties and says when everything is tied', () => {
    const names = (groups: Array<Array<{ n: string }>>) => groups.map((g) => g.map((x) => x.n));
    expect(tiedChain(names(tiedGroups(items, score, 'higher')))).toBe('b › a = c = e › f › d');
    expect(tiedChain([['x', 'y', 'z']])).toBe('x = y = z (all tied)');
    expect(tiedChain([['x']])).toBe('x');
  });

  it('probe bpb ranks two copies of one checkpoint as 1= and 1=, and the report chains them with =', () => {
    const out = tempDir();
    const copy = copyCheckpoint(CKPT.agent);
    const run = runProbe(['bpb', '--ckpt', CKPT.agent, copy, CKPT.prose, '--probes', DEMO_PROBES, '--out', join(out, 'bpb'), '--no-cache']);
    expect(run.code, run.stderr).toBe(0);
    const rows = run.stderr.split('\n').filter((l) => /ngram-(agent|prose)|\/ckpt /.test(l));
    expect(rows.map((r) => r.trim().split(/\s+/)[0])).toEqual(['1=', '1=', '3']);
    const html = renderReport(collectRuns([join(out, 'bpb')]));
    expect(html).toMatch(/BPB \(lower is better\): (ngram-agent|ckpt) = (ngram-agent|ckpt) › ngram-prose/);
    expect(readFileSync(join(out, 'bpb', 'results.json'), 'utf8')).toContain('"ranking"');
  }, 120_000);
});
