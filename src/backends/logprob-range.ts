/**
 * What a log-probability can be: a natural log of a probability, so at most 0. A
 * log-softmax in float arithmetic can put a certain token a hair above 0, so values up to
 * LOGPROB_TOLERANCE pass; exactly 0 is legal. -Infinity is an impossible token: an
 * in-process backend can compute one, a server cannot send one in JSON.
 */

/** How far above 0 rounding may put a log-probability: far above float32 noise, far below anything a lie gains. */
export const LOGPROB_TOLERANCE = 1e-4;

/** Whether `value` is a log-probability; `impossible` admits -Infinity. */
export function isLogprob(value: unknown, impossible = true): value is number {
  return typeof value === 'number' && !Number.isNaN(value) && value <= LOGPROB_TOLERANCE && (impossible || Number.isFinite(value));
}

/** Whether `value` is a sum of `count` log-probabilities (each may carry the tolerance). */
export function isLogprobSum(value: unknown, count: number, impossible = true): value is number {
  return (
    typeof value === 'number' &&
    !Number.isNaN(value) &&
    value <= LOGPROB_TOLERANCE * Math.max(1, count) &&
    (impossible || Number.isFinite(value))
  );
}
