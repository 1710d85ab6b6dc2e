/**
 * Option-value parsers shared by the verbs. A value outside its range is refused as a
 * usage error (exit 2, commander names the flag) rather than run with: `--top-p 5` or a
 * `--seed abc` that parses to NaN would otherwise give numbers that look like results.
 */
import { InvalidArgumentError } from 'commander';
import { MAX_TIMEOUT_S, timeoutProblem } from '../util/timeout.ts';

/** `Number()` of a non-empty value ('' and '  ' are 0 to Number). */
function numberOf(value: string): number {
  return value.trim() === '' ? Number.NaN : Number(value);
}

/** A parser that accepts a number passing `ok`, else refuses with `expected`. */
function numberParser(ok: (n: number) => boolean, expected: string): (value: string) => number {
  return (value) => {
    const n = numberOf(value);
    if (!ok(n)) throw new InvalidArgumentError(expected);
    return n;
  };
}

export const positiveInteger = numberParser((n) => Number.isInteger(n) && n >= 1, 'expected a positive integer');

/** A timeout in whole seconds, at most MAX_TIMEOUT_S (one day): Node fires a longer timer at once (util/timeout.ts). */
export const timeoutSeconds = numberParser(
  (n) => Number.isInteger(n) && timeoutProblem(n) === undefined,
  `expected a whole number of seconds from 1 to ${MAX_TIMEOUT_S} (one day)`,
);

export const nonNegativeInteger = numberParser((n) => Number.isInteger(n) && n >= 0, 'expected a whole number ≥ 0');

/** A training step: a whole number ≥ 0 that an event's int64 step holds exactly (a safe integer). */
export const trainingStep = numberParser((n) => Number.isSafeInteger(n) && n >= 0, 'expected a training step: a whole number ≥ 0');

/** Seeds: any safe integer (derived seeds hash it, so sign does not matter; a fraction or NaN would). */
export const integer = numberParser(Number.isSafeInteger, 'expected a whole number');

/** Sampling temperature and other finite quantities that cannot be negative. */
export const positiveNumber = numberParser((n) => Number.isFinite(n) && n > 0, 'expected a number > 0');
export const nonNegativeNumber = numberParser((n) => Number.isFinite(n) && n >= 0, 'expected a number ≥ 0');

/** A probability mass (`--top-p`): 0 ≤ p ≤ 1. */
export const probability = numberParser((n) => Number.isFinite(n) && n >= 0 && n <= 1, 'expected a number from 0 to 1');

/** A TCP port: 0 (any free one) to 65535. */
export const tcpPort = numberParser((n) => Number.isInteger(n) && n >= 0 && n <= 65535, 'expected a TCP port from 0 to 65535');
