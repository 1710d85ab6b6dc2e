/**
 * `probe demo`: probes built from the demo trajectories, the ladder, the report — in one
 * run directory that a second invocation refuses without --resume and finishes with it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import type { RunManifest } from '../src/store/run-dir.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';

/** One result cache for the demo runs of this file: the second demo reads what the first computed, the build included. */
const CACHE = tempDir('probe-demo-cache-');

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 900_000,
    env: { ...process.env, PROBE_CACHE_DIR: CACHE },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe.skipIf(skipWithoutBwrap)('probe demo', () => {
  it('builds the probes, runs the ladder on the embedded checkpoints and writes the report', () => {
    const out = join(tempDir(), 'demo');
    // Smaller than the default demo (the full one is measured in docs/benchmarks.md), the same path through the code.
    const args = [
      'demo',
      '--out',
      out,
      '-n',
      '2',
      '--passk-max-tokens',
      '256',
      '--asap-runs',
      '1',
      '--asap-instances',
      '2',
      '--asap-max-steps',
      '8',
      '--asap-max-tokens',
      '256',
      '--json',
    ];
    const run = probe(args);
    expect(run.code, run.stderr).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      out: string;
      report: string;
      minutes: number;
      stages: Array<{ stage: string; seconds: number }>;
      shortlist: string[];
      results: Array<{
        checkpoint: string;
        bpb: number;
        pass_at: Record<string, number> | null;
        asap: unknown;
        control: boolean;
        heldout_code_bpb?: number | null;
      }>;
    };
    expect(doc.report).toBe(join(out, 'report.html'));
    // Where the time went, stage by stage, in the order they ran.
    expect(doc.stages.map((t) => t.stage)).toEqual(['build', 'bpb + mcq', 'pass@k', 'asap', 'report']);
    expect(doc.stages.every((t) => t.seconds >= 0)).toBe(true);
    expect(existsSync(doc.report)).toBe(true);

    // The probes were built here by replaying the shipped trajectories: 11 of 12 have a T*, two context formats each.
    const probes = readFileSync(join(out, 'probes.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; distractors: string[] });
    expect(probes).toHaveLength(22);
    expect(probes.some((p) => p.distractors.length > 0)).toBe(true);
    const manifest = JSON.parse(readFileSync(join(out, 'run.json'), 'utf8')) as RunManifest;
    expect(manifest.verb).toBe('demo');
    expect(manifest.checkpoints.map((c) => c.name.split('/').pop())).toEqual([
      'ngram-prose',
      'ngram-code',
      'ngram-agent',
      'attn-agent',
      'llama-bpe8k-s40',
      'llama-bpe8k-s250',
      'llama-bpe8k-s1500',
      'contaminated-agent',
    ]);
    expect(manifest.checkpoints.filter((c) => c.control).map((c) => c.name.split('/').pop())).toEqual(['contaminated-agent']);
    expect(manifest.probe_set!.items).toBe(22);

    // The ladder: the contaminated control first by BPB and pass@1, yet never shortlisted; ASAP ran for the shortlist only.
    expect(doc.results[0]!.checkpoint).toMatch(/contaminated-agent$/);
    expect(doc.results[0]!.control).toBe(true);
    expect(doc.results[0]!.pass_at!['1']).toBeGreaterThan(0);
    expect(doc.shortlist).toHaveLength(2);
    expect(doc.shortlist.some((c) => c.endsWith('contaminated-agent'))).toBe(false);
    expect(
      doc.results
        .filter((r) => r.asap !== null)
        .map((r) => r.checkpoint)
        .sort(),
    ).toEqual([...doc.shortlist].sort());
    // The real rungs carry their known order, and BPB agrees with it.
    const real = doc.results.filter((r) => r.heldout_code_bpb !== null && r.heldout_code_bpb !== undefined);
    expect(real.map((r) => r.checkpoint.split('/').pop()).sort()).toEqual(['llama-bpe8k-s1500', 'llama-bpe8k-s250', 'llama-bpe8k-s40']);
    expect([...real].sort((a, b) => a.bpb - b.bpb).map((r) => r.heldout_code_bpb)).toEqual(
      real.map((r) => r.heldout_code_bpb!).sort((a, b) => a - b),
    );
    const html = readFileSync(doc.report, 'utf8');
    for (const id of ['runs', 'ranking', 'bpb', 'mcq', 'passk', 'asap', 'items', 'transcripts'])
      expect(html).toContain(`<section id="${id}">`);
    expect(html).toContain('Against the known order');
    expect(html).toMatch(/contaminated-agent <span class="control">\(control\)<\/span>/);

    // pass@K sampled one rendering of each trajectory: its first (native) item, never the md+xml copy of the same action.
    const passk = readFileSync(join(out, 'passk', 'samples.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { checkpoint: string; item: string });
    const passkItems = new Set(passk.map((r) => r.item));
    expect(passkItems.size).toBe(12);
    expect([...passkItems].some((id) => id.endsWith(':asap'))).toBe(false);

    // A finished demo directory is not overwritten; with --resume everything is read back.
    const lines = (probeName: string) => readFileSync(join(out, probeName, 'samples.jsonl'), 'utf8').split('\n').length;
    const before = ['bpb', 'mcq', 'passk'].map(lines);
    const again = probe(args);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds a run: pass --resume/);
    const resumed = probe([...args, '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const redo = JSON.parse(resumed.stdout) as typeof doc;
    expect(redo.results).toEqual(doc.results);
    expect(['bpb', 'mcq', 'passk'].map(lines)).toEqual(before);

    // A second demo with the cache warm: the probe set is the one built before, byte for byte, read back
    // instead of replayed (the build is most of a warm demo), and the table is the same.
    const builds = readdirSync(join(CACHE, 'builds'));
    expect(builds).toHaveLength(1);
    const second = join(tempDir(), 'demo');
    const warm = probe([...args.map((a) => (a === out ? second : a))]);
    expect(warm.code, warm.stderr).toBe(0);
    const warmDoc = JSON.parse(warm.stdout) as typeof doc;
    expect(readFileSync(join(second, 'probes.jsonl'), 'utf8')).toBe(readFileSync(join(out, 'probes.jsonl'), 'utf8'));
    expect(warmDoc.stages.find((t) => t.stage === 'build')!.seconds).toBeLessThan(doc.stages.find((t) => t.stage === 'build')!.seconds / 4);
    expect(warmDoc.results).toEqual(doc.results);
    expect(readdirSync(join(CACHE, 'builds'))).toEqual(builds);
  }, 1_200_000);
});
