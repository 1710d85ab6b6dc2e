/**
 * Option-value parsers shared by the verbs. A value outside its range is refused as a
 * usage error (exit 2, commander names the flag) rather than run with: `--top-p 5` or a
 * `--seed abc` that parses to NaN would otherwise give numbers that look like results.
 */
import { InvalidArgumentError } from 'commander';

/** `Number()` of a non-empty value ('' and '  ' are 0 to Number). */
function numberOf(value: string): number {
  return value.trim() === '' ? Number.NaN : Number(value);
}

export function positiveInteger(value: string): number {
  const n = numberOf(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

export function nonNegativeInteger(value: string): number {
  const n = numberOf(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number ≥ 0');
  return n;
}

/** Seeds: any safe integer (derived seeds hash it, so sign does not matter; a fraction or NaN would). */
export function integer(value: string): number {
  const n = numberOf(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('expected a whole number');
  return n;
}

/** Sampling temperature and other finite quantities that cannot be negative. */
export function nonNegativeNumber(value: string): number {
  const n = numberOf(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number ≥ 0');
  return n;
}

/** A probability mass (`--top-p`): 0 ≤ p ≤ 1. */
export function probability(value: string): number {
  const n = numberOf(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('expected a number from 0 to 1');
  return n;
}

/** A TCP port: 0 (any free one) to 65535. */
export function tcpPort(value: string): number {
  const n = numberOf(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a TCP port from 0 to 65535');
  return n;
}
