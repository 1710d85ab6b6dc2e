/**
 * The replay's SWE-agent windowed editor against what SWE-agent itself printed: window
 * placement, refusal text and lint, checked on the recorded observations of a real run
 * (pydicom__pydicom-1458, read in place) and on the real test-repo fixture.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeFormat } from '../src/formats/registry.ts';
import { drift } from '../src/replay/drift.ts';
import { runAction } from '../src/sandbox/run-action.ts';
import { inferWorkdir } from '../src/replay/workdir.ts';
import { skipWithoutBwrap } from './helpers/bwrap.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import type { Sandbox } from '../src/sandbox/types.ts';
import { sweAgentAction } from '../src/formats/swe-agent.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { fixtureTask } from './helpers/tasks.ts';

/** The line the editor adds when the sandbox has no flake8 (its edits are then checked for syntax only). */
const LINT_ABSENT = /\n\(probe: flake8 is not installed in this sandbox[^\n]*\)/;

describe.skipIf(skipWithoutBwrap || !hasRealData)('SWE-agent windowed editor, as SWE-agent printed it', () => {
  const pydicom = hasRealData ? importTrajectory(real('swe-agent/pydicom__pydicom-1458.traj')) : null;
  let sb: Sandbox;
  let hasFlake8 = false;
  beforeAll(async () => {
    // The run's directory, as the replay infers it; the fixture's tree is only a place to put the file.
    sb = await openSandbox('local', await fixtureTask('missing-colon', { workdir: inferWorkdir(pydicom!)!.dir }));
    hasFlake8 = (await sb.exec('command -v flake8')).exitCode === 0;
  });
  afterAll(async () => sb?.close());

  /** The recorded lines `first..last` of an observation's window (`N:text`). */
  const windowLines = (step: number, first: number, last: number) => {
    const shown = new Map(
      pydicom!.steps[step]!.observation!.split('\n')
        .map((l) => /^(\d+):(.*)$/.exec(l))
        .filter((m) => m !== null)
        .map((m) => [Number(m[1]), m[2]!]),
    );
    return Array.from({ length: last - first + 1 }, (_, i) => {
      const line = shown.get(first + i);
      if (line === undefined) throw new Error(`step ${step} does not show line ${first + i}`);
      return line;
    });
  };

  it('open FILE 293, three refused edits and the accepted one: each output is the recorded one', async () => {
    // numpy_handler.py as the run saw it from line 237 on (its observations show 237–372); above, a stand-in
    // that opens the function and docstring line 237 sits in, so the file lints as the real one did.
    const filler = [...Array.from({ length: 234 }, () => '#'), 'def get_pixeldata(ds, read_only=False):', '    """Parameters'];
    const text = `${[...filler, ...windowLines(8, 237, 286), ...windowLines(4, 287, 372)].join('\n')}\n`;
    await sb.exec('mkdir -p pydicom/pixel_data_handlers');
    await sb.writeFile('pydicom/pixel_data_handlers/numpy_handler.py', text);
    for (const index of [4, 5, 6, 7, 8]) {
      const step = pydicom!.steps[index]!;
      const r = await runAction(sb, step.action);
      const output = hasFlake8 ? r.output : r.output.replace(LINT_ABSENT, '');
      if (!hasFlake8 && step.action.args.command === 'edit') expect(r.output).toMatch(LINT_ABSENT);
      expect(
        drift(output, nativeFormat(pydicom!.format).recordedOutput(step.observation!)),
        `step ${index}: ${step.action.text.split('\n')[0]}\n${r.output}`,
      ).toBe(0);
    }
    expect(await sb.diff()).toContain("+    if 'PixelData' in ds:");
  });
});

describe.skipIf(skipWithoutBwrap)('SWE-agent edit lint', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await openSandbox('local', await fixtureTask('missing-colon'));
  });
  afterAll(async () => sb?.close());

  it('an edit that adds an undefined name is refused when flake8 is there, and says so when it is not', async () => {
    await sb.restore({ base_commit: (await fixtureTask('missing-colon')).base_commit, patch: '' });
    await runAction(sb, sweAgentAction('open tests/missing_colon.py\n'));
    const r = await runAction(sb, sweAgentAction('edit 4:5\ndef division(a: float, b: float) -> float:\n    return a/c\nend_of_edit\n'));
    if ((await sb.exec('command -v flake8')).exitCode === 0) {
      expect(r.exitCode).toBe(1);
      expect(r.output).toContain("ERRORS:\n- F821 undefined name 'c'\n");
      expect(r.output).toContain('Your changes have NOT been applied.');
      expect(r.output).toContain('5:    return a/c'); // the window as the edit would have looked
      expect(await sb.diff()).toBe('');
    } else {
      // Without flake8 the edit (valid syntax) applies, and the output says what was not checked.
      expect(r.output).toMatch(LINT_ABSENT);
      expect(await sb.diff()).toContain('+    return a/c');
    }
  });

  it('an edit that fixes the existing syntax error is not blamed for it', async () => {
    await sb.restore({ base_commit: (await fixtureTask('missing-colon')).base_commit, patch: '' });
    await runAction(sb, sweAgentAction('open tests/missing_colon.py\n'));
    const r = await runAction(sb, sweAgentAction('edit 4:4\ndef division(a: float, b: float) -> float:\nend_of_edit\n'));
    expect(r.exitCode).toBe(0);
    expect(r.output).toContain('File updated.');
    expect(await sb.diff()).toContain('+def division(a: float, b: float) -> float:');
  });
});
