/** `probe replay` and `probe build` as a user runs them. */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { runProbeKilledAfter } from './helpers/cli.ts';
import { PROBE_BIN, tempDir } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { FIXTURE_TASKS } from './helpers/tasks.ts';

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 300_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}
const missingColon = join(FIXTURE_TASKS, 'missing-colon', 'task.json');

describe.skipIf(skipWithoutBwrap || !hasRealData)('probe replay', () => {
  it('prints the documented JSON for a real trajectory', () => {
    const run = probe(['replay', real('mini-swe-agent/github_issue.v2.traj.json'), '--task', missingColon, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as {
      task: string;
      steps: Array<{ index: number; action: string; edits: boolean; resolved: boolean | null }>;
      decisiveStep: { index: number; action: string } | null;
    };
    expect(out.task).toBe('swe-agent__test-repo-1');
    expect(out.steps).toHaveLength(10);
    expect(out.steps[4]).toMatchObject({ index: 4, edits: true, resolved: true });
    expect(out.steps[0]).toMatchObject({ edits: false, resolved: null });
    expect(out.decisiveStep?.index).toBe(4);
    expectVerdictsAndOutputs(run.stdout);
  });

  /** Beyond the documented fields: each state's per-test verdict and each step's replayed output. */
  function expectVerdictsAndOutputs(stdout: string) {
    type Lists = { passed: string[]; failed: string[]; missing: string[] };
    type VerdictJson = {
      resolved: boolean;
      status: string;
      reason: string | null;
      exitCode: number;
      failToPass: Lists;
      passToPass: Lists;
      flaky?: boolean;
      runs?: number;
    };
    const out = JSON.parse(stdout) as {
      base: VerdictJson;
      final: VerdictJson;
      missingAtBase: unknown;
      steps: Array<{ index: number; output: string; timedOut: boolean; verdict: VerdictJson | null }>;
    };
    const f2p = 'tests/test_missing_colon.py::test_division';
    const p2p = 'tests/test_tribonaccy.py::test_tribonacci';
    expect(out.base).toEqual({
      resolved: false,
      status: 'ok',
      reason: null,
      exitCode: 1,
      failToPass: { passed: [], failed: [f2p], missing: [] },
      passToPass: { passed: [p2p], failed: [], missing: [] },
    });
    expect(out.missingAtBase).toBeNull();
    expect(out.steps[4]!.verdict).toMatchObject({ resolved: true, status: 'ok', failToPass: { passed: [f2p], failed: [], missing: [] } });
    expect(out.steps[0]!.verdict).toBeNull();
    expect(out.final).toMatchObject({ resolved: true, flaky: false, runs: 3, passToPass: { passed: [p2p], failed: [], missing: [] } });
    // Step 3 is `cat tests/missing_colon.py`: its replayed output is the base file.
    expect(out.steps[3]!.output).toContain('def division(a: float, b: float) -> float\n');
    expect(out.steps[3]!.timedOut).toBe(false);
  }

  it('shows a step table with T* on the terminal', () => {
    const run = probe(['replay', real('swe-agent/test-repo-i1.traj'), '--task', missingColon]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^2 \*\s+edit/m);
    expect(run.stderr).toContain('T* = step 2');
    expect(run.stderr).toContain(
      "workdir /klieret__swe-agent-test-repo (inferred from the working_dir swe-agent recorded in its steps' state)",
    );
  });

  it('rejects truncated JSON and an unknown format with exit 2', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'cut.traj'), readFileSync(real('swe-agent/test-repo-i1.traj'), 'utf8').slice(0, 500));
    const cut = probe(['replay', join(dir, 'cut.traj'), '--task', missingColon]);
    expect(cut.code).toBe(2);
    expect(cut.stderr).toContain(`${join(dir, 'cut.traj')}: not valid JSON`);
    writeFileSync(join(dir, 'odd.json'), '{"hello": 1}');
    const odd = probe(['replay', join(dir, 'odd.json'), '--task', missingColon]);
    expect(odd.code).toBe(2);
    expect(odd.stderr).toMatch(/field "format"/);
  });

  it('exits 1 with the reason when the trajectory is rejected', () => {
    // Placed away from where it ran, its absolute paths miss the repository.
    const run = probe(['replay', real('swe-agent/test-repo-1c2844.traj'), '--task', missingColon, '--workdir', '/testbed', '--json']);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).rejected).toMatch(/never changes the working tree/);
  });
});

describe.skipIf(skipWithoutBwrap)('probe build', () => {
  it('builds probe items and records bad trajectories as rejections without losing the others', () => {
    const dir = tempDir();
    const trajectories = join(dir, 'trajectories');
    mkdirSync(trajectories);
    copyFileSync(join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json'), join(trajectories, 'shop__pricing-1.mini.traj.json'));
    copyFileSync(
      join(REPO_ROOT, 'trajectories', 'money-js__cents-12.sweagent.traj'),
      join(trajectories, 'money-js__cents-12.sweagent.traj'),
    );
    writeFileSync(join(trajectories, 'shop__pricing-1.broken.traj.json'), '[{"role": "system", "content": "x"');
    writeFileSync(join(trajectories, 'nobody.traj'), '{}');
    const out = join(dir, 'probes.jsonl');
    const run = probe([
      'build',
      '--trajectories',
      trajectories,
      '--tasks',
      join(REPO_ROOT, 'verifiers'),
      '--out',
      out,
      '--context',
      'native',
      'asap',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(2);
    const summary = JSON.parse(run.stdout) as {
      items: number;
      quality: { file: string; warnings: string[] };
      counts: Record<string, number>;
      trajectories: Array<{ trajectory: string; decisiveStep: number | null; rejected: string | null }>;
    };
    expect(summary.items).toBe(3);
    expect(summary.counts).toEqual({ accepted: 2, rejected: 0, flaky: 0, 'bad-input': 2 });
    const byName = Object.fromEntries(summary.trajectories.map((t) => [t.trajectory.split('/').pop(), t]));
    expect(byName['shop__pricing-1.mini.traj.json']!.decisiveStep).toBe(5);
    expect(byName['shop__pricing-1.broken.traj.json']!.rejected).toMatch(/not valid JSON/);
    expect(byName['nobody.traj']!.rejected).toMatch(/no task/);
    const items = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; gold: string; format: string });
    // No md+xml item for a SWE-agent windowed-editor gold (it would not run as bash).
    expect(items.map((i) => i.id)).toEqual(['money-js__cents-12@sweagent', 'shop__pricing-1@mini', 'shop__pricing-1@mini:asap']);
    expect(items[1]!.gold).toBe(
      "```bash\nsed -i 's/return round(total - discount, 2)/return round(total * (1 - discount \\/ 100), 2)/' cart/pricing.py\n```",
    );
    expect(items[2]!.gold).toBe(
      "<bash>\nsed -i 's/return round(total - discount, 2)/return round(total * (1 - discount \\/ 100), 2)/' cart/pricing.py\n</bash>",
    );
    // The quality report is written beside the probe set, on the items written, with where T* falls in each trajectory.
    expect(summary.quality.file).toBe(`${out}.quality.json`);
    const quality = JSON.parse(readFileSync(`${out}.quality.json`, 'utf8')) as {
      items: number;
      per_item: Array<{ id: string; trajectory_actions: number | null }>;
      warnings: Array<{ code: string }>;
    };
    expect(quality.per_item.map((q) => q.id)).toEqual(items.map((i) => i.id));
    expect(quality.per_item.every((q) => q.trajectory_actions !== null)).toBe(true);
    expect(summary.quality.warnings).toEqual(quality.warnings.map((w) => w.code));
  });
});

describe.skipIf(skipWithoutBwrap || !hasRealData)('probe build summary and --strict', () => {
  // Real trajectories linked (not copied) under the names build matches to the fixture task.
  const trajectoriesDir = (files: Record<string, string>) => {
    const dir = join(tempDir(), 'trajectories');
    mkdirSync(dir);
    for (const [name, source] of Object.entries(files)) symlinkSync(real(source), join(dir, name));
    return dir;
  };
  const tasks = join(FIXTURE_TASKS, 'missing-colon', 'task.json');

  it('prints accepted / rejected / flaky counts, and --strict exits 1 when a trajectory is rejected', () => {
    const both = trajectoriesDir({
      'swe-agent__test-repo-1.mini.traj.json': 'mini-swe-agent/github_issue.v2.traj.json',
      'swe-agent__test-repo-1.tools.traj': 'swe-agent/test-repo-1c2844.traj',
    });
    // --workdir /testbed places the tool-call run away from /SWE-agent__test-repo, where it ran: its absolute paths find nothing, a rejection.
    const strict = probe([
      'build',
      '--trajectories',
      both,
      '--tasks',
      tasks,
      '--out',
      join(both, '..', 'probes.jsonl'),
      '--no-distractors',
      '--repeats',
      '1',
      '--workdir',
      '/testbed',
      '--strict',
    ]);
    expect(strict.code, strict.stderr).toBe(1);
    expect(strict.stderr).toContain('trajectories: 1 accepted, 1 rejected, 0 flaky, 0 bad input');
    expect(strict.stderr).toMatch(/rejected\s+\S+swe-agent__test-repo-1\.tools\.traj: the trajectory never changes the working tree/);
    expect(
      readFileSync(join(both, '..', 'probes.jsonl'), 'utf8')
        .trim()
        .split('\n'),
    ).toHaveLength(1); // the accepted one is still written

    const rejectedOnly = trajectoriesDir({ 'swe-agent__test-repo-1.tools.traj': 'swe-agent/test-repo-1c2844.traj' });
    const lenient = probe([
      'build',
      '--trajectories',
      rejectedOnly,
      '--tasks',
      tasks,
      '--out',
      join(rejectedOnly, '..', 'probes.jsonl'),
      '--no-distractors',
      '--repeats',
      '1',
      '--workdir',
      '/testbed',
      '--json',
    ]);
    expect(lenient.code, lenient.stderr).toBe(0);
    const summary = JSON.parse(lenient.stdout) as { counts: Record<string, number>; trajectories: Array<{ status: string }> };
    expect(summary.counts).toEqual({ accepted: 0, rejected: 1, flaky: 0, 'bad-input': 0 });
    expect(summary.trajectories.map((t) => t.status)).toEqual(['rejected']);
  });
});

describe.skipIf(skipWithoutBwrap)('probe build, killed and resumed', () => {
  it('keeps each replayed trajectory as it finishes; --resume replays only the rest and writes the same probes', async () => {
    const dir = tempDir();
    const trajectories = join(dir, 'trajectories');
    mkdirSync(trajectories);
    // More trajectories than the build runs at once, so that the kill after the first lands with work left.
    for (const name of [
      'cart-js__total-8.mini.traj.json',
      'shop__pricing-1.mini.traj.json',
      'stats__median-7.mini.traj.json',
      'api__pagination-5.mini.traj.json',
      'csv-js__quoted-11.mini.traj.json',
      'shop__slugify-2.mini2.traj.json',
      'config__loader-6.mini2.traj.json',
    ])
      copyFileSync(join(REPO_ROOT, 'trajectories', name), join(trajectories, name));
    const args = (out: string) => [
      'build',
      '--trajectories',
      trajectories,
      '--tasks',
      join(REPO_ROOT, 'verifiers'),
      '--out',
      out,
      '--context',
      'native',
      '--json',
    ];
    // The replay's drift figure depends on timings in test output; everything else must match.
    const comparable = (file: string) =>
      readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => {
          const item = JSON.parse(l) as { replay: Record<string, unknown> };
          return { ...item, replay: { ...item.replay, mean_drift: undefined } };
        });

    const whole = join(dir, 'whole.jsonl');
    expect(probe(args(whole)).code).toBe(0);
    expect(existsSync(`${whole}.progress.jsonl`)).toBe(false);

    const out = join(dir, 'killed.jsonl');
    const log = `${out}.progress.jsonl`;
    // Killed right after the header and the first finished trajectory were saved.
    runProbeKilledAfter(args(out), 'killed.jsonl.progress.jsonl:2');
    expect(existsSync(out)).toBe(false);
    expect(readFileSync(log, 'utf8').split('\n').length - 1).toBe(2);

    const refused = probe(args(out));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/killed\.jsonl\.progress\.jsonl: an interrupted build left its progress here: pass --resume/);
    const other = probe([...args(out), '--restore', 'replay', '--resume']);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/field "restore": the interrupted build used "patch", this one "replay"/);

    const resumed = probe([...args(out), '--resume']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(comparable(out)).toEqual(comparable(whole));
    expect(existsSync(log)).toBe(false);
  }, 600_000);
});

describe.skipIf(skipWithoutBwrap)('probe build --restore replay', () => {
  it('records the state as a replay of the actions before T*', () => {
    const dir = tempDir();
    const trajectories = join(dir, 'trajectories');
    mkdirSync(trajectories);
    copyFileSync(
      join(REPO_ROOT, 'trajectories', 'api__pagination-5.mini.traj.json'),
      join(trajectories, 'api__pagination-5.mini.traj.json'),
    );
    const out = join(dir, 'probes.jsonl');
    const run = probe([
      'build',
      '--trajectories',
      trajectories,
      '--tasks',
      join(REPO_ROOT, 'verifiers'),
      '--out',
      out,
      '--restore',
      'replay',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const [item] = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { state: unknown; decisive_step: number });
    expect(item!.decisive_step).toBe(5);
    expect(item!.state).toMatchObject({ kind: 'replay', actions: 5 });
  });
});

describe.skipIf(skipWithoutBwrap)('probe build --distractor-ckpt', () => {
  it("offers a checkpoint's samples at T* as candidates and logs their fate", () => {
    const dir = tempDir();
    const trajectories = join(dir, 'trajectories');
    mkdirSync(trajectories);
    copyFileSync(join(REPO_ROOT, 'trajectories', 'shop__pricing-1.mini.traj.json'), join(trajectories, 'shop__pricing-1.mini.traj.json'));
    const out = join(dir, 'probes.jsonl');
    const run = probe([
      'build',
      '--trajectories',
      trajectories,
      '--tasks',
      join(REPO_ROOT, 'verifiers'),
      '--out',
      out,
      '--distractor-ckpt',
      join(REPO_ROOT, 'checkpoints', 'contaminated-agent'),
      '--distractor-samples',
      '2',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const [item] = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            gold: string;
            distractors: string[];
            distractor_log: Array<{ text: string; source: string; kept: boolean; reason: string; changed?: string[] }>;
          },
      );
    const sampled = item!.distractor_log.filter((r) => r.source.startsWith('sample:'));
    expect(sampled.length).toBeGreaterThan(0);
    // The contaminated control reproduces the gold, which is never kept as a distractor.
    expect(sampled[0]).toMatchObject({ kept: false, reason: 'byte-identical to the gold action' });
    // Every option is a near miss of the same kind: an edit of the file the gold edits, of a comparable length.
    const bytes = (t: string) => Buffer.byteLength(t, 'utf8');
    expect(item!.distractors.length).toBeGreaterThanOrEqual(3);
    for (const kept of item!.distractor_log.filter((r) => r.kept)) {
      expect(kept.changed, kept.text).toEqual(['cart/pricing.py']);
      expect(bytes(kept.text) / bytes(item!.gold)).toBeGreaterThanOrEqual(0.5);
      expect(bytes(kept.text) / bytes(item!.gold)).toBeLessThanOrEqual(2);
    }
    // A candidate that runs but changes nothing is logged as not an edit.
    for (const r of item!.distractor_log.filter((r) => r.changed?.length === 0))
      expect(r).toMatchObject({ kept: false, reason: expect.stringMatching(/not an edit$/) });
  });
});
