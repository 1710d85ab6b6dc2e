/**
 * `probe asap` as a user runs it: the real bin, the embedded checkpoints, the demo suite in
 * bubblewrap; the JSON contract, transcripts, a run killed with SIGKILL and resumed, and
 * bad input refused with exit 2 before any model work.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { runProbeKilledAfter } from './helpers/cli.ts';
import { CKPT, PROBE_BIN, tempDir } from './helpers/paths.ts';

const CONTAMINATED = join(REPO_ROOT, 'checkpoints', 'contaminated-agent');
// No cache: the resumed run must rebuild what the kill lost from the run directory alone.
const ARGS = [
  'asap',
  '--ckpt',
  CKPT.attention,
  CONTAMINATED,
  '--instances',
  'shop__pricing-1',
  'stats__median-7',
  '--runs',
  '2',
  '--max-steps',
  '6',
  '--concurrency',
  '2',
  '--no-cache',
];

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface AsapJson {
  out: string;
  results: Array<{
    checkpoint: string;
    runs: number;
    instances: number;
    pass_at: Record<string, number>;
    intersection: number;
    intersection_count: number;
    terminations: Record<string, number>;
    behaviour: Record<string, number>;
    items: Array<{
      instance: string;
      n: number;
      c: number;
      runs: Array<{ run: number; resolved: boolean; termination: string; steps: number; transcript: string }>;
    }>;
  }>;
}

/** What must not depend on whether the run was interrupted (timings and paths aside). */
function comparable(out: AsapJson) {
  return out.results.map((r) => ({
    ...r,
    timing: undefined,
    items: r.items.map((i) => ({ ...i, runs: i.runs.map((x) => ({ ...x, transcript: undefined })) })),
  }));
}

function episodeSteps(dir: string): Record<string, unknown[]> {
  const steps: Record<string, unknown[]> = {};
  const root = join(dir, 'episodes');
  for (const ckpt of readdirSync(root)) {
    for (const instance of readdirSync(join(root, ckpt))) {
      for (const file of readdirSync(join(root, ckpt, instance)).filter((f) => f.endsWith('.jsonl'))) {
        steps[`${ckpt}/${instance}/${file}`] = readFileSync(join(root, ckpt, instance, file), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l))
          .filter((r) => r.type === 'step')
          .map((r) => [r.completion, r.outcome, r.observation, r.patch]);
      }
    }
  }
  return steps;
}

describe.skipIf(skipWithoutBwrap)('probe asap', () => {
  it('runs episodes of the embedded checkpoints, writes transcripts and the documented JSON; a SIGKILLed run resumes to the same results', async () => {
    const whole = join(tempDir(), 'whole');
    const run = probe([...ARGS, '--out', whole, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as AsapJson;
    expect(out.results.map((r) => r.checkpoint)).toEqual([CKPT.attention, CONTAMINATED]);
    for (const r of out.results) {
      expect(Object.keys(r)).toEqual(expect.arrayContaining(['checkpoint', 'pass_at', 'intersection', 'behaviour']));
      expect(Object.keys(r.pass_at)).toEqual(['1', '2']);
      expect(r.items.map((i) => [i.instance, i.n])).toEqual([
        ['shop__pricing-1', 2],
        ['stats__median-7', 2],
      ]);
      expect(r.behaviour.runs).toBe(4);
      expect(Object.values(r.terminations).reduce((a, b) => a + b, 0)).toBe(4);
      for (const item of r.items) {
        for (const episode of item.runs) {
          const transcript = readFileSync(episode.transcript, 'utf8');
          expect(transcript).toContain('# Task\n<task>\n');
          expect(transcript).toMatch(/<!-- episode ended: \w+; (RESOLVED|not resolved)/);
          expect(episode.steps).toBeGreaterThan(0);
          expect(episode.steps).toBeLessThanOrEqual(6);
        }
      }
    }
    // The contaminated control has memorised the demo transcripts: it walks the reference to its fix.
    const [attn, contaminated] = out.results;
    expect(contaminated!.items.reduce((a, i) => a + i.c, 0)).toBeGreaterThan(0);
    expect(contaminated!.behaviour.autonomous_edits).toBeGreaterThan(attn!.behaviour.autonomous_edits!);
    expect(existsSync(join(whole, 'prefixes', 'shop__pricing-1.json'))).toBe(true);

    // The same run, killed with SIGKILL right after the first episode saved its start and one step, then rerun.
    const killed = join(tempDir(), 'killed');
    runProbeKilledAfter([...ARGS, '--out', killed, '--json'], 'shop__pricing-1/run-0.jsonl:2');
    const firstEpisode = join(
      killed,
      'episodes',
      CKPT.attention.replace(/^\/+/, '').replace(/[^A-Za-z0-9._-]+/g, '_'),
      'shop__pricing-1',
      'run-0.jsonl',
    );
    const saved = readFileSync(firstEpisode, 'utf8').trim().split('\n');
    expect(saved.map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['start', 'step']);
    expect(existsSync(join(killed, 'results.json'))).toBe(false);
    const refused = probe([...ARGS, '--out', killed, '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/run\.json: this directory already holds a run: pass --resume/);
    const resumed = probe([...ARGS, '--out', killed, '--json', '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(comparable(JSON.parse(resumed.stdout) as AsapJson)).toEqual(comparable(out));
    expect(episodeSteps(killed)).toEqual(episodeSteps(whole));
  }, 600_000);

  it('refuses a leaking prefix, an unknown instance, and a run directory with other settings, with exit 2 and no model work', () => {
    const out = join(tempDir(), 'leak');
    const leak = probe([
      'asap',
      '--ckpt',
      CKPT.attention,
      '--instances',
      'shop__pricing-1',
      '--prefix-steps',
      '6',
      '--runs',
      '1',
      '--out',
      out,
    ]);
    expect(leak.code).toBe(2);
    expect(leak.stderr).toMatch(
      /shop__pricing-1\.mini\.traj\.json: field "steps\[0\.\.5\]": the 6-step prefix leaks the reference's solution/,
    );
    expect(existsSync(join(out, 'episodes'))).toBe(false);

    const unknown = probe(['asap', '--ckpt', CKPT.attention, '--instances', 'no-such-task', '--out', out]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/field "instance_id": no task record for no-such-task/);

    const ok = probe(['asap', '--ckpt', CKPT.agent, '--instances', 'stats__median-7', '--runs', '1', '--max-steps', '2', '--out', out]);
    expect(ok.code, ok.stderr).toBe(0);
    const other = probe([
      'asap',
      '--ckpt',
      CKPT.agent,
      '--instances',
      'stats__median-7',
      '--runs',
      '1',
      '--max-steps',
      '3',
      '--out',
      out,
      '--resume',
    ]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/run\.json: field "config\.max_steps": the run here was started with 2, this one has 3/);
  }, 300_000);
});
