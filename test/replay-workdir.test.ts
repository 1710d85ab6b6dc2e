/** Where a replay places the repository: what a trajectory shows of the directory it ran in, and the paths that miss it. */
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { judgeSample } from '../src/probes/passk.ts';
import { restoreProbeState, taskForItem } from '../src/probes/restore.ts';
import { probeItemFrom } from '../src/replay/build.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import { inferWorkdir, pathsOutside } from '../src/replay/workdir.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { freshSandboxes } from '../src/sandbox/pool.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import type { Trajectory } from '../src/schema/trajectory.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { fixtureTask } from './helpers/tasks.ts';

const local = { openSandbox: (t: LoadedTask) => openSandbox('local', t), sandboxName: 'local' };

describe('workdir inference', () => {
  const trajectory = (format: Trajectory['format'], commands: string[], observations: string[] = []): Trajectory => ({
    format,
    source: 't',
    problemStatement: null,
    preamble: [],
    submission: null,
    steps: commands.map((command, index) => ({
      index,
      thought: '',
      response: '',
      action: { text: command, kind: 'bash', tool: 'bash', args: { command } },
      observation: observations[index] ?? null,
    })),
  });

  it("reads SWE-agent's (Current directory: …) footer, a cd prefix, and OpenHands' workspace", () => {
    expect(inferWorkdir(trajectory('swe-agent', ['ls'], ['a\n(Open file: n/a)\n(Current directory: /django__django)\nbash-$']))?.dir).toBe(
      '/django__django',
    );
    expect(inferWorkdir(trajectory('mini-swe-agent-1', ['ls', 'cd /testbed && grep -rn x .']))).toEqual({
      dir: '/testbed',
      evidence: 'step 1: cd /testbed && …',
    });
    expect(inferWorkdir(trajectory('openhands', ['ls /workspace', 'cat /workspace/django__django__3.0/setup.py']))?.dir).toBe(
      '/workspace/django__django__3.0',
    );
    expect(inferWorkdir(trajectory('openhands', ['cat /workspace/api/pagination.py']))?.dir).toBe('/workspace');
  });

  it('names absolute paths outside the workdir, not sed expressions, URLs, system paths or paths inside it', () => {
    const t = trajectory('mini-swe-agent-1', [
      "sed -i 's/foo/bar/g' src/a.py 2>/dev/null && curl -s https://example.com/x",
      'cat /testbed/src/a.py /usr/lib/python3/os.py ~/notes $HOME/x',
      'cat /home/me/repo/src/a.py',
    ]);
    expect(pathsOutside(t, '/testbed')).toEqual([{ step: 2, path: '/home/me/repo/src/a.py' }]);
  });

  it('shows nothing where nothing is shown, and never a system directory', () => {
    expect(inferWorkdir(trajectory('mini-swe-agent-1', ['ls -la', 'cat README.md']))).toBeNull();
    expect(inferWorkdir(trajectory('mini-swe-agent-1', ['cd /tmp && ls']))).toBeNull();
  });
});

describe.skipIf(skipWithoutBwrap || !hasRealData)('a probe item remembers where its trajectory ran', () => {
  it('SWE-agent tool-call run at /SWE-agent__test-repo: the item records it, and its gold (an edit of the file open there) passes only there', async () => {
    const task = await fixtureTask('missing-colon');
    const trajectory = importTrajectory(real('swe-agent/test-repo-1c2844.traj'));
    const replay = await replayTrajectory(trajectory, task, local);
    const item = probeItemFrom(trajectory, task, replay, 'native', REPO_ROOT)!;
    expect(item.workdir).toBe('/SWE-agent__test-repo');
    expect(item.state).toMatchObject({
      kind: 'patch',
      tool_state: expect.stringContaining('/SWE-agent__test-repo/tests/missing_colon.py'),
    });
    const fresh = (t: LoadedTask) => freshSandboxes((x) => openSandbox('local', x), t);
    const options = { leaseFor: fresh, gradersFor: fresh, restore: restoreProbeState };
    expect(await judgeSample(item.gold, item, taskForItem(task, item), options, new Map())).toMatchObject({ parsed: true, resolved: true });
    // In the task's own /testbed the open file's absolute path names nothing: the same edit cannot pass there.
    expect(await judgeSample(item.gold, item, task, options, new Map())).toMatchObject({ resolved: false });
  });
});
