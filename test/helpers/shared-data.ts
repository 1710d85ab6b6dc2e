/** Real third-party data under ../shared/data/real (read in place, never copied). */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/embedded.ts';

export const REAL_DATA = join(REPO_ROOT, '..', 'shared', 'data', 'real');
export const hasRealData = existsSync(REAL_DATA);
export const real = (rel: string) => join(REAL_DATA, rel);
