/** The one resume rule every store follows (store/resume.ts). */
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { checkResume, flattenSettings } from '../src/store/resume.ts';

const base = {
  file: 'runs/x/run.json',
  refusal: 'already holds a run: pass --resume',
  differs: (field: string, was: unknown, now: unknown) => `${field}: ${JSON.stringify(was)} → ${JSON.stringify(now)}`,
};

describe('checkResume', () => {
  it('starts anew where nothing is stored, whatever --resume says', () => {
    expect(checkResume({ ...base, stored: undefined, settings: { n: 1 }, resume: false })).toBe('new');
    expect(checkResume({ ...base, stored: undefined, settings: { n: 1 }, resume: true })).toBe('new');
  });

  it('refuses stored work without --resume, and continues it with the same settings', () => {
    expect(() => checkResume({ ...base, stored: { n: 1 }, settings: { n: 1 }, resume: false })).toThrow(/run\.json: already holds a run/);
    expect(checkResume({ ...base, stored: { n: 1 }, settings: { n: 1 }, resume: true })).toBe('resumed');
    expect(checkResume({ ...base, stored: { n: 1 }, settings: { n: 1 }, resume: 'implicit' })).toBe('resumed');
  });

  it('names the first setting that differs, nested ones by their dotted name, as bad input', () => {
    const stored = { verb: 'bpb', ...flattenSettings('config', { n: 4, k: [1, 2] }) };
    const settings = { verb: 'bpb', ...flattenSettings('config', { n: 4, k: [1, 2, 4] }) };
    try {
      checkResume({ ...base, stored, settings, resume: true });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InputError);
      expect((error as InputError).exitCode).toBe(2);
      expect((error as InputError).message).toBe('runs/x/run.json: field "config.k": config.k: [1,2] → [1,2,4]');
    }
    // A setting added since (absent before) differs too: a run is continued only under what it was started with.
    expect(() => checkResume({ ...base, stored: { n: 4 }, settings: { n: 4, dtype: 'fp16' }, resume: true })).toThrow(/field "dtype"/);
  });
});
