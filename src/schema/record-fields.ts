/** Fields many run-directory records share (schema/run-manifest.ts, sample-results.ts, episode-records.ts). */
import { z } from 'zod';

/**
 * Any JavaScript number, as TypeScript's `number` is: NaN and ±Infinity included. A log
 * writes them tagged and reads them back exactly (util/tagged-numbers.ts), and they are
 * real results (the log-likelihood of an impossible token), which `z.number()` refuses.
 */
export const anyNumber = z.custom<number>((value) => typeof value === 'number', { error: 'expected a number' });

/** A change the verifier dropped because it may alter how the tests run (verify/harness-paths.ts `Tampering`). */
export const TamperingSchema = z.object({ path: z.string(), reason: z.string() });

/** How a step's completion ended (`action`: a complete action was found; otherwise the backend's finish reason). */
export const StepFinishSchema = z.enum(['action', 'stop', 'length', 'eos', 'error']);

/** A share, 0 to 1 (JSON has no NaN: an undefined share — nothing to average — is written as null). */
export const rate = z.number().min(0).max(1);
export const maybeRate = rate.nullable();
export const finite = z.number().refine(Number.isFinite, 'expected a finite number');
/** pass@k by k. */
export const rates = z.record(z.string(), maybeRate);
