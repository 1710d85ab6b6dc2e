/**
 * How a stage over checkpoints reports the ones that failed: each said on stderr, the exit
 * code they imply, and the `errors` field of its results (kept in results.json before a
 * report reads it, so the report names them too).
 */
import { InputError } from '../errors.ts';
import type { Failure } from './checkpoint-loop.ts';

/** The `errors` field of a verb's JSON, and the exit code they imply: 2 for bad input or environment, else 1 (a server or graph that failed). */
export function reportFailures(failures: Failure[]): Record<string, unknown> {
  if (failures.length === 0) return {};
  for (const f of failures) process.stderr.write(`probe: ${f.message}\n`);
  // 2 when any checkpoint was bad input or environment (a mismatched tokenizer), else 1.
  process.exitCode = Math.max(...failures.map((f) => f.exitCode));
  return {
    errors: failures.map((f) =>
      f instanceof InputError
        ? { file: f.location.file, field: f.location.field ?? null, message: f.message }
        : { file: null, field: null, message: f.message },
    ),
  };
}
