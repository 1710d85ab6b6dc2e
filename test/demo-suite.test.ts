/** The shipped demo suite: consistent task records, and the same T* in both sandboxes. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { probeItemFrom } from '../src/replay/build.ts';
import { taskForTrajectory } from '../src/verify/load-task.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import type { SandboxKind } from '../src/settings/sandbox-kinds.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { loadTasks } from '../src/verify/load-task.ts';
import { buildTaskRecord } from '../src/verify/task-files.ts';
import { gradeSandbox } from '../src/verify/verifier.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import { runAction, writeToolState } from '../src/sandbox/run-action.ts';
import { parseActionText } from '../src/formats/registry.ts';
import { skipWithoutDocker } from './helpers/docker.ts';

/** T* of each demo trajectory: some have edits before it that do not fix the task yet. */
const EXPECTED_T_STAR: Record<string, number> = {
  'shop__pricing-1': 5,
  'shop__slugify-2': 3,
  'inventory__stock-3': 4,
  'orders__dates-4': 3,
  'api__pagination-5': 5,
  'config__loader-6': 3,
  'stats__median-7': 3,
  'cart-js__total-8': 4,
  'strings-js__title-case-9': 3,
  'dates-js__add-days-10': 4,
  'csv-js__quoted-11': 5,
  'money-js__cents-12': 3,
};

const tasks = await loadTasks(join(REPO_ROOT, 'verifiers'));
const trajectoryFiles = readdirSync(join(REPO_ROOT, 'trajectories'))
  .sort()
  .map((f) => join(REPO_ROOT, 'trajectories', f));
const shipped = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('demo suite data', () => {
  it('every shipped distractor is a logged edit of a comparable length; an item with fewer than 3 is flagged', () => {
    const bytes = (t: string) => Buffer.byteLength(t, 'utf8');
    for (const item of shipped) {
      const distractors = item.distractors as string[];
      const log = item.distractor_log as Array<{ text: string; kept: boolean; reason: string; changed?: string[] }>;
      for (const d of distractors) {
        const record = log.find((r) => r.text === d);
        expect(record?.kept).toBe(true);
        expect(record?.changed?.length, d).toBeGreaterThan(0);
        expect(bytes(d) / bytes(String(item.gold))).toBeGreaterThanOrEqual(0.5);
        expect(bytes(d) / bytes(String(item.gold))).toBeLessThanOrEqual(2);
      }
      expect(distractors).not.toContain(item.gold);
      expect(item.flags ?? [], String(item.id)).toEqual(distractors.length < 3 ? ['fewer than 3 distractors'] : []);
    }
    expect(shipped.filter((item) => (item.distractors as string[]).length >= 3).length).toBeGreaterThan(shipped.length / 2);
  });

  it('has at least 12 tasks in Python and JavaScript, in several native formats, with 6–20 steps each', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(12);
    expect(new Set(tasks.map((t) => t.log_parser))).toEqual(new Set(['pytest', 'unittest', 'node-test']));
    const trajectories = trajectoryFiles.map((f) => importTrajectory(f));
    expect(new Set(trajectories.map((t) => t.format))).toEqual(
      new Set(['mini-swe-agent-1', 'mini-swe-agent-1.1', 'swe-agent', 'openhands']),
    );
    for (const t of trajectories) {
      expect(t.steps.length, t.source).toBeGreaterThanOrEqual(6);
      expect(t.steps.length, t.source).toBeLessThanOrEqual(20);
    }
    expect(Object.keys(EXPECTED_T_STAR).sort()).toEqual(tasks.map((t) => t.instance_id).sort());
  });

  it.each(tasks.map((t) => [t.instance_id, t] as const))(
    '%s: task.json is what its repo/, tests-added/ and meta.json give',
    (_id, task) => {
      const { file, repoDir: _repoDir, ...record } = task;
      const rebuilt = buildTaskRecord(join(file, '..'));
      expect(rebuilt.base_commit).toBe(record.base_commit);
      expect(rebuilt.test_patch).toBe(record.test_patch);
    },
  );
});

function replaySuite(kind: SandboxKind) {
  const options = {
    openSandbox: (t: (typeof tasks)[number]) => openSandbox(kind, t),
    sandboxName: kind,
    concurrency: kind === 'docker' ? 2 : 4,
  };
  it.each(trajectoryFiles.map((f) => [f.split('/').pop()!, f] as const))('%s', async (_name, file) => {
    const task = taskForTrajectory(file, tasks)!;
    const trajectory = importTrajectory(file);
    const replay = await replayTrajectory(trajectory, task, options);
    expect(replay.rejected).toBeNull();
    expect(replay.decisiveStep?.index).toBe(EXPECTED_T_STAR[task.instance_id]);
    // The shipped probe items are exactly what this replay builds.
    for (const format of ['native', 'asap'] as const) {
      const item = probeItemFrom(trajectory, task, replay, format, REPO_ROOT);
      if (!item) {
        // No md+xml item when the decisive action is SWE-agent's windowed editor.
        expect([format, trajectory.format]).toEqual(['asap', 'swe-agent']);
        continue;
      }
      const stored = shipped.find((s) => s.id === item.id)!;
      expect(stored, item.id).toBeDefined();
      for (const field of ['context', 'gold', 'state', 'decisive_step', 'format'] as const) expect(stored[field]).toEqual(item[field]);
    }
  });
}

/** Stored distractors, applied at the decisive state, are rejected by the verifier. */
function reverifyDistractors(kind: SandboxKind) {
  const sample = shipped
    .filter((item) => !String(item.id).endsWith(':asap') && (item.distractors as string[]).length > 0)
    .map((item) => {
      const distractors = item.distractors as string[];
      return [String(item.id), item, distractors[String(item.id).length % distractors.length]!] as const;
    });
  it.each(sample)('%s: a stored distractor edits the tree and is rejected', async (_id, item, distractor) => {
    const task = tasks.find((t) => t.instance_id === item.task)!;
    const trajectory = importTrajectory(join(REPO_ROOT, String((item.source as { file: string }).file)));
    const action = parseActionText(distractor, String(item.format), trajectory.steps[Number(item.decisive_step)]!.action);
    const sb = await openSandbox(kind, task);
    try {
      await sb.restore({ base_commit: task.base_commit, patch: (item.state as { patch: string }).patch });
      await writeToolState(sb, (item.state as { tool_state?: string }).tool_state);
      const before = await sb.diff();
      await runAction(sb, action, 60_000);
      expect(await sb.diff()).not.toBe(before);
      const verdict = await gradeSandbox(
        sb,
        freshSandboxes((t) => openSandbox(kind, t), task),
        task,
      );
      expect(verdict.resolved).toBe(false);
      expect(distractor).not.toBe(item.gold);
    } finally {
      await sb.close();
    }
  });
}

describe.skipIf(skipWithoutBwrap)('demo suite replays in the local sandbox', () => replaySuite('local'));
describe.skipIf(skipWithoutDocker)('demo suite replays in the docker sandbox', () => replaySuite('docker'));
describe.skipIf(skipWithoutBwrap)('stored distractors are rejected (local sandbox)', () => reverifyDistractors('local'));
describe.skipIf(skipWithoutDocker)('stored distractors are rejected (docker sandbox)', () => reverifyDistractors('docker'));
