/** `probe screen`: one command from BPB to a shortlist. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { hasBubblewrap } from '../src/sandbox/local.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';

describe.skipIf(!hasBubblewrap())('probe screen', () => {
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
