/**
 * Work finished while the process shuts down (a Docker sandbox closed under a running test,
 * a server request cancelled) is never saved as a result. In its own file: the flag is
 * process-wide and stays set.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProbeError } from '../src/errors.ts';
import { JsonlLog, readJsonl } from '../src/store/jsonl-log.ts';
import { interruptedBy, noteInterrupt } from '../src/util/interrupt.ts';
import { tempDir } from './helpers/paths.ts';

describe('after SIGINT', () => {
  it('refuses to append a result, so a resumed run computes it again', () => {
    const file = join(tempDir(), 'samples.jsonl');
    const log = new JsonlLog<{ n: number }>(file);
    log.append({ n: 1 });
    noteInterrupt('SIGINT');
    noteInterrupt('SIGTERM');
    expect(interruptedBy()).toBe('SIGINT');
    expect(() => log.append({ n: 2 })).toThrow(ProbeError);
    expect(() => log.append({ n: 2 })).toThrow(/interrupted by SIGINT: not saving/);
    expect(readJsonl(file)).toEqual([{ n: 1 }]);
    expect(existsSync(file)).toBe(true);
  });
});
