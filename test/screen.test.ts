/** `probe screen`: one command from BPB to a shortlist. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';
import { skipWithoutDocker } from './helpers/docker.ts';

describe.skipIf(skipWithoutBwrap)('probe screen', () => {
  it('escalates the best by BPB and MCQ to pass@K, shortlists by pass@1, and runs ASAP episodes for the shortlist; a control is a ceiling, never shortlisted', () => {
    const ckpts = ['ngram-prose', 'attn-agent', 'contaminated-agent'].map((n) => join(EMBEDDED_CHECKPOINTS, n));
    const run = spawnSync(
      process.execPath,
      [
        PROBE_BIN,
        'screen',
        '--ckpt',
        ...ckpts,
        '--probes',
        join(REPO_ROOT, 'probes', 'demo.jsonl'),
        '--limit',
        '4',
        '-n',
        '2',
        '--shortlist',
        '1',
        '--passk-top',
        '2',
        '--asap-runs',
        '1',
        '--asap-max-steps',
        '8',
        '--asap-out',
        join(tempDir(), 'asap'),
        '--json',
      ],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as {
      results: Array<{
        checkpoint: string;
        cheap_rank: number;
        pass_at: Record<string, number> | null;
        shortlisted: boolean;
        control: boolean;
        asap: { pass_at_1: number; parsable_turns: number } | null;
      }>;
      shortlist: string[];
      asap_out: string;
    };
    expect(out.results.map((r) => r.checkpoint.split('/').pop())).toEqual(['contaminated-agent', 'attn-agent', 'ngram-prose']);
    expect(out.results.map((r) => r.control)).toEqual([true, false, false]);
    // --passk-top 2 counts candidates only: both get pass@K, and the control beside them as the ceiling.
    expect(out.results.map((r) => r.pass_at !== null)).toEqual([true, true, true]);
    expect(out.results[0]!.pass_at!['1']).toBeGreaterThan(0);
    // Top of every probe, yet never shortlisted: the shortlist is the best candidate.
    expect(out.results.map((r) => r.shortlisted)).toEqual([false, true, false]);
    expect(out.shortlist.map((c) => c.split('/').pop())).toEqual(['attn-agent']);
    // ASAP ran for the shortlist only.
    expect(out.results.map((r) => r.asap !== null)).toEqual([false, true, false]);
    expect(out.results[1]!.asap!.parsable_turns).toBeGreaterThan(0);
    expect(out.asap_out).toContain('asap');
  });
});

describe.skipIf(skipWithoutBwrap || skipWithoutDocker)('probe screen --asap-env', () => {
  it('runs the shortlist in all three environment kinds, side by side in its rows, and the report reads each', () => {
    const out = join(tempDir(), 'screen-envs');
    const ckpts = ['ngram-prose', 'attn-agent'].map((n) => join(EMBEDDED_CHECKPOINTS, n));
    const args = ['screen', '--ckpt', ...ckpts, '--probes', join(REPO_ROOT, 'probes', 'demo.jsonl'), '--limit', '3', '-n', '2'];
    const episodes = ['--shortlist', '1', '--asap-runs', '1', '--asap-max-steps', '2', '--asap-max-tokens', '48'];
    const run = spawnSync(
      process.execPath,
      [PROBE_BIN, ...args, ...episodes, '--asap-env', 'swe', 'terminal', 'research', '--no-cache', '--json', '--out', out],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: 600_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      results: Array<{ checkpoint: string; shortlisted: boolean; asap: unknown; asap_envs?: Record<string, { pass_at_1: number }> }>;
    };
    const [shortlisted] = doc.results.filter((r) => r.shortlisted);
    expect(shortlisted!.asap).not.toBeNull();
    expect(Object.keys(shortlisted!.asap_envs!)).toEqual(['terminal', 'research']);
    for (const env of Object.values(shortlisted!.asap_envs!))
      expect(env).toEqual({ pass_at_1: expect.any(Number), intersection: expect.any(Number), parsable_turns: expect.any(Number) });
    expect(doc.results.filter((r) => !r.shortlisted).every((r) => r.asap_envs === undefined)).toBe(true);
    const report = spawnSync(process.execPath, [PROBE_BIN, 'report', out, '--json'], { cwd: REPO_ROOT, encoding: 'utf8' });
    expect(report.status, report.stderr).toBe(0);
    const summary = JSON.parse(report.stdout);
    expect(summary.asap.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([shortlisted!.checkpoint]);
    expect(summary.terminal.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([shortlisted!.checkpoint]);
    expect(summary.research.map((r: { checkpoint: string }) => r.checkpoint)).toEqual([shortlisted!.checkpoint]);
  }, 600_000);
});
