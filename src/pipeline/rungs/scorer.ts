/**
 * How a pipeline has one rung scored on one open checkpoint. Every pipeline logs each
 * rung's items in its run directory as they finish (so a killed run resumes); the study
 * also measures what each rung cost. The rungs (cheap.ts, passk.ts) take a scorer and
 * stay the same whichever way they are run.
 */
import type { CompletionBackend } from '../../backends/types.ts';
import type { ItemHooks } from '../../probes/memo.ts';
import type { SampleProbe } from '../../schema/sample-results.ts';
import type { RunDir } from '../../store/run-dir.ts';
import { itemHooks } from '../checkpoint-loop.ts';

/** Runs `score` as rung `rung`: with which backend and which item hooks is the scorer's choice. */
export type RungScorer = <R, T>(rung: SampleProbe, score: (backend: CompletionBackend, hooks: ItemHooks<T>) => Promise<R>) => Promise<R>;

/** The plain scorer: the checkpoint's backend, items logged in the run directory (where there is one) and ticked on the progress display. */
export function loggedScorer(
  dir: RunDir | undefined,
  checkpoint: string,
  backend: CompletionBackend,
  tick: (reused: boolean) => void,
): RungScorer {
  return (rung, score) => score(backend, itemHooks(dir, rung, checkpoint, tick));
}
