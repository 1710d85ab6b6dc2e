/** The action-format registry: every name resolves to its own format, and an unknown one is refused, never guessed. */
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { sampledActionText } from '../src/formats/action-format.ts';
import { formatOf, itemFormat, nativeFormat, SCAFFOLDS, UnknownFormat } from '../src/formats/registry.ts';

describe('formatOf', () => {
  it('knows md+xml and every scaffold as native:<scaffold>', () => {
    expect(formatOf('md+xml').name).toBe('md+xml');
    for (const scaffold of SCAFFOLDS) {
      expect(nativeFormat(scaffold).scaffold).toBe(scaffold);
      expect(formatOf(`native:${scaffold}`)).toBe(nativeFormat(scaffold));
      expect(formatOf(`native:${scaffold}`).stops.length).toBeGreaterThan(0);
    }
  });

  it('refuses a format it does not know instead of falling back to some stop', () => {
    expect(() => formatOf('native:aider')).toThrow(UnknownFormat);
    expect(() => formatOf('native:aider')).toThrow(/unknown action format "native:aider" \(known: "md\+xml", /);
    expect(() => nativeFormat('aider')).toThrow(/unknown trajectory format "aider"/);
  });

  it('names the item, its file and field when a probe item carries an unknown format (exit 2)', () => {
    const item = { id: 'x@1', format: 'native:aider', source: { file: 'trajectories/x.json', format: 'aider' } };
    try {
      itemFormat(item);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).exitCode).toBe(2);
      expect((error as InputError).message).toMatch(/^trajectories\/x\.json: field "format": probe x@1: unknown action format/);
    }
  });

  it('puts a closing tag back on a sampled action, but not the fence SWE-agent strips', () => {
    expect(sampledActionText(formatOf('md+xml'), { text: '<bash>\nls\n', stop: '</bash>' })).toBe('<bash>\nls\n</bash>');
    expect(sampledActionText(formatOf('native:swe-agent'), { text: '```\nls', stop: '\n```' })).toBe('```\nls');
    expect(formatOf('native:swe-agent').parse('```\nopen a.py\n```')).toMatchObject({ tool: 'swe-agent', args: { command: 'open' } });
  });

  it('reads the command output out of each scaffold’s observation wrapper', () => {
    expect(nativeFormat('mini-swe-agent-1').recordedOutput('<returncode>0</returncode>\n<output>\nhi\n</output>')).toBe('hi\n');
    expect(nativeFormat('swe-agent').recordedOutput('hi\n(Open file: a.py)\n(Current directory: /repo)\nbash-$')).toBe('hi');
    expect(nativeFormat('openhands').recordedOutput('a\r\nb')).toBe('a\nb');
  });
});
