/** Where a replay places the repository: what a trajectory shows of the directory it ran in, and the paths that miss it. */
import { describe, expect, it } from 'vitest';
import { inferWorkdir, pathsOutside } from '../src/replay/workdir.ts';
import type { Trajectory } from '../src/schema/trajectory.ts';

describe('workdir inference', () => {
  const trajectory = (format: Trajectory['format'], commands: string[], observations: string[] = []): Trajectory => ({
    format, source: 't', problemStatement: null, preamble: [], submission: null,
    steps: commands.map((command, index) => ({ index, thought: '', response: '', action: { text: command, kind: 'bash', tool: 'bash', args: { command } }, observation: observations[index] ?? null })),
  });

  it("reads SWE-agent's (Current directory: …) footer, a cd prefix, and OpenHands' workspace", () => {
    expect(inferWorkdir(trajectory('swe-agent', ['ls'], ['a\n(Open file: n/a)\n(Current directory: /django__django)\nbash-$']))?.dir).toBe('/django__django');
    expect(inferWorkdir(trajectory('mini-swe-agent-1', ['ls', 'cd /testbed && grep -rn x .']))).toEqual({ dir: '/testbed', evidence: 'step 1: cd /testbed && …' });
    expect(inferWorkdir(trajectory('openhands', ['ls /workspace', 'cat /workspace/django__django__3.0/setup.py']))?.dir).toBe('/workspace/django__django__3.0');
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
