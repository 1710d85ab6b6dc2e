/**
 * A control that memorised gold steps: a real byte n-gram checkpoint with a copy memory (as
 * contaminated-agent is), built the way the embedded ladder's rungs are, that continues each
 * memorised context with its gold step. The ceiling an environment's harness must let through.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { buildRung } from '../../scripts/checkpoints/ladder.ts';
import { tempDir } from './paths.ts';

export interface MemorisedStep {
  /** The exact transcript before the step. */
  context: string;
  gold: string;
}

/** Writes the control's checkpoint directory and returns it. */
export function memorisingControl(name: string, description: string, steps: readonly MemorisedStep[]): string {
  const golds = steps.map((s) => ({ ...s, whole: false }));
  const files = buildRung(
    { name, family: 'ngram', corpora: ['agent'], contaminated: true, description },
    { prose: [], code: [], agent: golds.map((g) => g.context + g.gold), demoGolds: golds },
  );
  const dir = tempDir(`probe-${name}-`);
  for (const [path, content] of files) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}
