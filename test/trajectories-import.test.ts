/** Importers: every real file in ../shared/data/real, plus fixtures for formats without real samples. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { shellWords } from '../src/formats/actions.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { renderTranscript } from '../src/formats/md-xml.ts';
import { parseAction } from '../src/formats/md-xml-parse.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { tempDir } from './helpers/paths.ts';

const fixture = (name: string) => join(import.meta.dirname, 'fixtures', 'trajectories', name);

describe.skipIf(!hasRealData)('real trajectories', () => {
  it.each([
    ['mini-swe-agent/github_issue.v1.traj.json', 'mini-swe-agent-1', '```bash\n'],
    ['mini-swe-agent/github_issue.v2.traj.json', 'mini-swe-agent-1.1', '```mswea_bash_command\n'],
  ])('%s imports as %s with its exact action text', (file, format, fence) => {
    const t = importTrajectory(real(file));
    expect(t.format).toBe(format);
    expect(t.steps).toHaveLength(10);
    expect(t.problemStatement).toMatch(/^GitHub Issue: SyntaxError: invalid syntax/);
    const fix = t.steps[4]!;
    expect(fix.action.kind).toBe('bash');
    expect(fix.action.args.command).toBe(
      "sed -i 's/def division(a: float, b: float) -> float/def division(a: float, b: float) -> float:/' tests/missing_colon.py",
    );
    expect(fix.action.text.startsWith(fence)).toBe(true);
    expect(fix.response).toContain(fix.action.text);
    expect(fix.observation).toBe('<returncode>0</returncode>\n<output>\n</output>');
    expect(t.steps[9]!.action.kind).toBe('submit');
    expect(t.preamble.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('SWE-agent (older format): windowed-editor commands', () => {
    const t = importTrajectory(real('swe-agent/test-repo-i1.traj'));
    expect(t.format).toBe('swe-agent');
    expect(t.steps.map((s) => s.action.kind)).toEqual(['search', 'view', 'edit', 'bash', 'submit']);
    expect(t.steps[2]!.action.text).toBe('edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit\n');
    expect(t.steps[2]!.action.args).toEqual({
      command: 'edit',
      start: 4,
      end: 4,
      replacement: 'def division(a: float, b: float) -> float:',
    });
    expect(t.problemStatement).toMatch(/^SyntaxError: invalid syntax/);
    expect(t.submission).toContain('diff --git a/tests/missing_colon.py');
  });

  it('SWE-agent (tool-call format): search/replace edit', () => {
    const t = importTrajectory(real('swe-agent/test-repo-1c2844.traj'));
    expect(t.steps[2]!.action.args).toEqual({
      command: 'edit_replace',
      search: 'def division(a: float, b: float) -> float',
      replace: 'def division(a: float, b: float) -> float:',
      replace_all: false,
    });
    expect(t.steps[1]!.action.args).toEqual({ command: 'open', argv: ['/SWE-agent__test-repo/tests/missing_colon.py'] });
  });

  it('SWE-agent on a real SWE-bench instance (pydicom)', () => {
    const t = importTrajectory(real('swe-agent/pydicom__pydicom-1458.traj'));
    expect(t.steps).toHaveLength(12);
    expect(t.steps.filter((s) => s.action.kind === 'edit')).toHaveLength(5);
    expect(t.steps[4]!.action.args).toEqual({ command: 'open', argv: ['pydicom/pixel_data_handlers/numpy_handler.py', '293'] });
    expect(t.problemStatement).not.toMatch(/TimeDelta/); // the demonstration in the history is not the task
  });
});

describe('fixture trajectories', () => {
  it('mini-swe-agent v2 tool-call mode: one step per call, observed by its tool reply', () => {
    const t = importTrajectory(fixture('mini-swe-agent-toolcall.traj.json'));
    expect(t.format).toBe('mini-swe-agent-1.1');
    expect(t.steps.map((s) => [s.action.kind, s.action.args.command])).toEqual([
      ['bash', 'cat greet.py'],
      ['bash', 'sed -i s/helo/hello/ greet.py'],
      ['submit', 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff'],
    ]);
    expect(t.steps[0]!.observation).toContain("print('helo')");
    expect(t.steps[2]!.observation).toBe('diff --git a/greet.py b/greet.py');
    expect(t.submission).toBe('diff --git a/greet.py b/greet.py\n');
    expect(t.problemStatement).toBe('The greeting is wrong.');
  });

  it('OpenHands events: run, edit, read, finish; think becomes the next thought', () => {
    const t = importTrajectory(fixture('openhands-events.json'));
    expect(t.format).toBe('openhands');
    expect(t.steps.map((s) => s.action.kind)).toEqual(['bash', 'edit', 'view', 'submit']);
    expect(t.steps[0]!.action.text).toBe('{"command": "cat api/pagination.py"}');
    expect(t.steps[1]!.thought).toBe('Floor division drops the partial page.');
    expect(t.steps[1]!.action.args).toMatchObject({ command: 'str_replace', old_str: '    return total // per_page' });
    expect(t.steps[1]!.observation).toContain('has been edited');
    expect(t.problemStatement).toBe('Fix the off-by-one in pagination.page_count.');
  });

  it('R2E-Gym function calls', () => {
    const t = importTrajectory(fixture('r2e-gym.json'));
    expect(t.format).toBe('r2e-gym');
    expect(t.steps.map((s) => s.action.kind)).toEqual(['view', 'edit', 'bash', 'submit']);
    expect(t.steps[1]!.action.args).toMatchObject({
      command: 'str_replace',
      path: '/testbed/cart/pricing.py',
      new_str: 'return round(total * (1 - discount / 100), 2)',
    });
    expect(t.steps[2]!.action.args).toEqual({ command: 'python -m pytest -q' });
  });

  it('ASAP md+xml logs round-trip through the renderer', () => {
    const text = renderTranscript('Fix it.', [
      { thought: 'Look.', action: { kind: 'bash', command: 'ls' }, observation: 'a.py' },
      {
        thought: 'Edit.',
        action: { kind: 'str_replace_editor', command: 'str_replace', path: 'a.py', oldStr: 'x = 1', newStr: 'x = 2' },
        observation: 'edited',
      },
      { thought: 'Done.', action: { kind: 'submit' } },
    ]);
    const file = join(tempDir(), 'episode.md');
    writeFileSync(file, text);
    const t = importTrajectory(file);
    expect(t.format).toBe('asap');
    expect(t.problemStatement).toBe('Fix it.');
    expect(t.steps.map((s) => s.action.kind)).toEqual(['bash', 'edit', 'submit']);
    expect(t.steps[1]!.action.text).toBe(
      '<str_replace_editor command="str_replace" path="a.py">\n<old_str>x = 1</old_str>\n<new_str>x = 2</new_str>\n</str_replace_editor>',
    );
    expect(t.steps[1]!.action.args).toMatchObject({ old_str: 'x = 1', new_str: 'x = 2', path: 'a.py' });
    expect(t.steps[0]!.observation).toBe('a.py');
    expect(parseAction(t.steps[1]!.action.text)).toEqual({
      kind: 'str_replace_editor',
      command: 'str_replace',
      path: 'a.py',
      oldStr: 'x = 1',
      newStr: 'x = 2',
    });
  });
});

describe('bad trajectory input', () => {
  const write = (name: string, text: string) => {
    const file = join(tempDir(), name);
    writeFileSync(file, text);
    return file;
  };
  it('truncated JSON names the file', () => {
    const file = write('cut.traj', '{"trajectory": [{"action": "ls", "observ');
    expect(() => importTrajectory(file)).toThrow(InputError);
    expect(() => importTrajectory(file)).toThrow(`${file}: not valid JSON`);
  });
  it('an unknown format asks for --format', () => {
    const file = write('odd.json', '{"hello": "world"}');
    expect(() => importTrajectory(file)).toThrow(/field "format": cannot tell the trajectory format; pass --format/);
  });
  it('a SWE-agent step without an action string names the field', () => {
    const file = write(
      'bad.traj',
      JSON.stringify({
        trajectory: [
          { action: 'ls', observation: '' },
          { action: 3, observation: '' },
        ],
      }),
    );
    expect(() => importTrajectory(file)).toThrow(/field "trajectory.1.action"/);
  });
  it('a missing file is an input error', () => {
    expect(() => importTrajectory('/nonexistent/x.traj')).toThrow(InputError);
  });
});

describe('shellWords', () => {
  it('splits like a POSIX shell', () => {
    expect(shellWords(`edit 'a b' "c \\"d\\"" e\\ f`)).toEqual(['edit', 'a b', 'c "d"', 'e f']);
  });
});
