/** Replay and T* on real third-party trajectories, in a task reconstructed from their observations. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { replayTrajectory, type ReplayResult } from '../src/replay/replay.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { renderTranscript } from '../src/formats/md-xml.ts';
import { loadTaskFile } from '../src/verify/load-task.ts';
import { tempDir } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { FIXTURE_TASKS, fixtureTask } from './helpers/tasks.ts';

const local = { openSandbox: (t: LoadedTask) => openSandbox('local', t), sandboxName: 'local' };
const task = await fixtureTask('missing-colon');

describe.skipIf(skipWithoutBwrap || !hasRealData)('replaying real trajectories (local sandbox)', () => {
  /** Steps whose replayed output differs from the recorded one. */
  const drifting = (r: ReplayResult) => r.steps.filter((s) => s.drift !== null && s.drift > 0).map((s) => s.index);

  it.each(['mini-swe-agent/github_issue.v1.traj.json', 'mini-swe-agent/github_issue.v2.traj.json'])(
    '%s: T* is its sed fix, and every step but `ls -la` replays as recorded',
    async (file) => {
      const r = await replayTrajectory(importTrajectory(real(file)), task, local);
      expect(r.rejected).toBeNull();
      expect(r.decisiveStep?.index).toBe(4);
      expect(r.decisiveStep?.action).toContain(
        "sed -i 's/def division(a: float, b: float) -> float/def division(a: float, b: float) -> float:/'",
      );
      expect(r.steps.filter((s) => s.edits).map((s) => s.index)).toEqual([4, 8]);
      expect(r.verifierRuns.states).toBe(3); // base, after the sed, after the rewrite
      // Steps 1 and 2 are `ls -la`: owners, dates and block counts are the recording machine's.
      expect(r.steps[1]!.action.args.command).toBe('ls -la');
      expect(r.steps[2]!.action.args.command).toBe('ls -la tests/');
      expect(drifting(r)).toEqual([1, 2]);
      // Its first command reads a path of the author's laptop: named, not silently missed.
      expect(r.workdir).toMatchObject({ dir: '/testbed', source: 'task' });
      expect(r.workdir.outside).toEqual([
        { step: 0, path: '/Users/fuchur/Documents/24/git_sync/swe-agent-test-repo/tests/./missing_colon.py' },
      ]);
    },
  );

  it('SWE-agent test-repo: T* is `edit 4:4`, in the directory it recorded, every step as recorded', async () => {
    const r = await replayTrajectory(importTrajectory(real('swe-agent/test-repo-i1.traj')), task, local);
    expect(r.rejected).toBeNull();
    expect(r.decisiveStep).toEqual({ index: 2, action: 'edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit\n' });
    expect(r.steps[3]!.output).toBe('8.2\n');
    expect(r.workdir).toMatchObject({ dir: '/klieret__swe-agent-test-repo', source: 'trajectory', outside: [] });
    expect(drifting(r)).toEqual([]);
  });

  it('SWE-agent tool-call format with absolute paths: the workdir is inferred, every step as recorded', async () => {
    const r = await replayTrajectory(importTrajectory(real('swe-agent/test-repo-1c2844.traj')), task, local);
    expect(r.workdir).toMatchObject({ dir: '/SWE-agent__test-repo', source: 'trajectory', outside: [] });
    expect(r.decisiveStep?.index).toBe(2);
    expect(r.steps.filter((s) => s.drift !== null)).toHaveLength(4);
    expect(drifting(r)).toEqual([]);
  });

  it('an explicit workdir wins, and the paths it strands are named per step', async () => {
    const r = await replayTrajectory(importTrajectory(real('swe-agent/test-repo-1c2844.traj')), task, { ...local, workdir: '/testbed' });
    expect(r.workdir).toMatchObject({ dir: '/testbed', source: 'flag' });
    expect(r.workdir.outside).toEqual([
      { step: 1, path: '/SWE-agent__test-repo/tests/missing_colon.py' },
      { step: 3, path: '/SWE-agent__test-repo/tests/missing_colon.py' },
    ]);
    expect(r.rejected).toMatch(/never changes the working tree/);
  });
});

describe.skipIf(skipWithoutBwrap)('replay rejections', () => {
  const episode = (steps: Parameters<typeof renderTranscript>[1]) => {
    const file = join(tempDir(), 'episode.md');
    writeFileSync(file, renderTranscript('Fix the missing colon.', steps));
    return importTrajectory(file);
  };
  const fix = {
    thought: 'Add the colon.',
    action: { kind: 'bash' as const, command: "sed -i 's/-> float$/-> float:/' tests/missing_colon.py" },
    observation: '',
  };

  it('a trajectory that never passes', async () => {
    const r = await replayTrajectory(
      episode([{ thought: 'Touch it.', action: { kind: 'bash', command: 'echo "# note" >> tests/missing_colon.py' }, observation: '' }]),
      task,
      local,
    );
    expect(r.decisiveStep).toBeNull();
    expect(r.rejected).toMatch(/final state does not pass.*test_division/);
  });

  it('a base state that already passes', async () => {
    const passing = { ...task, FAIL_TO_PASS: [], PASS_TO_PASS: ['tests/test_tribonaccy.py::test_tribonacci'] };
    const r = await replayTrajectory(episode([fix]), passing, local);
    expect(r.rejected).toMatch(/base state already passes/);
    expect(r.decisiveStep).toBeNull();
  });

  it('a command that hangs is cut off and the replay goes on', async () => {
    const r = await replayTrajectory(
      episode([{ thought: 'Wait.', action: { kind: 'bash', command: 'sleep 600' }, observation: '' }, fix]),
      task,
      { ...local, actionTimeoutMs: 1000 },
    );
    expect(r.steps[0]!.timedOut).toBe(true);
    expect(r.decisiveStep?.index).toBe(1);
  });

  it('a command that reaches for the network fails inside the jail, and nothing else is lost', async () => {
    const r = await replayTrajectory(
      episode([
        {
          thought: 'Download a fix.',
          action: {
            kind: 'bash',
            command:
              'curl -sS -m 5 https://example.com/fix.patch || python3 -c "import urllib.request; urllib.request.urlopen(\'http://example.com\', timeout=5)"',
          },
          observation: '',
        },
        fix,
      ]),
      task,
      local,
    );
    expect(r.steps[0]!.exitCode).not.toBe(0);
    expect(r.steps[0]!.output).toMatch(/resolve|unreachable|URLError|not found/i);
    expect(r.decisiveStep?.index).toBe(1);
  });

  it('a task whose repository is missing is an input error naming the field', async () => {
    const file = join(tempDir(), 'task.json');
    const { file: _f, repoDir: _r, ...record } = task;
    writeFileSync(file, JSON.stringify({ ...record, repo_path: 'nowhere' }));
    await expect(loadTaskFile(file)).rejects.toThrow(InputError);
    await expect(loadTaskFile(file)).rejects.toThrow(`${file}: field "repo_path"`);
  });

  it('a task whose tree does not match its base_commit is an input error', async () => {
    const file = join(FIXTURE_TASKS, 'missing-colon', 'task.json');
    const wrong = { ...task, file, instance_id: 'wrong-base', base_commit: '0'.repeat(40) };
    await expect(openSandbox('local', wrong)).rejects.toThrow(/field "base_commit"/);
  });
});
