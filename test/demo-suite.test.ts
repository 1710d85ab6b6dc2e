/** The shipped demo suite: consistent task records, and the same T* in both sandboxes. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { probeItemFrom, taskForTrajectory } from '../src/replay/build.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import { hasBubblewrap } from '../src/sandbox/local.ts';
import { openSandbox, type SandboxKind } from '../src/sandbox/open.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { loadTasks } from '../src/verify/load-task.ts';
import { buildTaskRecord } from '../src/verify/task-files.ts';
import { skipWithoutDocker } from './helpers/docker.ts';

/** T* of each demo trajectory: some have edits before it that do not fix the task yet. */
const EXPECTED_T_STAR: Record<string, number> = {
  'shop__pricing-1': 5, 'shop__slugify-2': 3, 'inventory__stock-3': 4, 'orders__dates-4': 3, 'api__pagination-5': 5,
  'config__loader-6': 3, 'stats__median-7': 3, 'cart-js__total-8': 4, 'strings-js__title-case-9': 3,
  'dates-js__add-days-10': 2, 'csv-js__quoted-11': 5, 'money-js__cents-12': 3,
};

const tasks = loadTasks(join(REPO_ROOT, 'verifiers'));
const trajectoryFiles = readdirSync(join(REPO_ROOT, 'trajectories')).sort().map((f) => join(REPO_ROOT, 'trajectories', f));
const shipped = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('demo suite data', () => {
  it('has at least 12 tasks in Python and JavaScript, in several native formats, with 6–20 steps each', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(12);
    expect(new Set(tasks.map((t) => t.log_parser))).toEqual(new Set(['pytest', 'unittest', 'node-test']));
    const trajectories = trajectoryFiles.map((f) => importTrajectory(f));
    expect(new Set(trajectories.map((t) => t.format))).toEqual(new Set(['mini-swe-agent-1', 'mini-swe-agent-1.1', 'swe-agent', 'openhands']));
    for (const t of trajectories) {
      expect(t.steps.length, t.source).toBeGreaterThanOrEqual(6);
      expect(t.steps.length, t.source).toBeLessThanOrEqual(20);
    }
    expect(Object.keys(EXPECTED_T_STAR).sort()).toEqual(tasks.map((t) => t.instance_id).sort());
  });

  it.each(tasks.map((t) => [t.instance_id, t] as const))('%s: task.json is what its repo/, tests-added/ and meta.json give', (_id, task) => {
    const { file, repoDir: _repoDir, ...record } = task;
    const rebuilt = buildTaskRecord(join(file, '..'));
    expect(rebuilt.base_commit).toBe(record.base_commit);
    expect(rebuilt.test_patch).toBe(record.test_patch);
  });
});

function replaySuite(kind: SandboxKind) {
  const options = { openSandbox: (t: (typeof tasks)[number]) => openSandbox(kind, t), sandboxName: kind, concurrency: kind === 'docker' ? 2 : 4 };
  it.each(trajectoryFiles.map((f) => [f.split('/').pop()!, f] as const))('%s', async (_name, file) => {
    const task = taskForTrajectory(file, tasks)!;
    const trajectory = importTrajectory(file);
    const replay = await replayTrajectory(trajectory, task, options);
    expect(replay.rejected).toBeNull();
    expect(replay.decisiveStep?.index).toBe(EXPECTED_T_STAR[task.instance_id]);
    // The shipped probe items are exactly what this replay builds.
    for (const format of ['native', 'asap'] as const) {
      const item = probeItemFrom(trajectory, task, replay, format, REPO_ROOT)!;
      const stored = shipped.find((s) => s.id === item.id)!;
      expect(stored, item.id).toBeDefined();
      for (const field of ['context', 'gold', 'state', 'decisive_step', 'format'] as const) expect(stored[field]).toEqual(item[field]);
    }
  });
}

describe.skipIf(!hasBubblewrap())('demo suite replays in the local sandbox', () => replaySuite('local'));
describe.skipIf(skipWithoutDocker)('demo suite replays in the docker sandbox', () => replaySuite('docker'));
