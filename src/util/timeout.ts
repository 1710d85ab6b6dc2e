/**
 * Timeouts, bounded. Node's timers hold at most 2^31−1 ms (24.8 days): a longer delay, a
 * negative one or NaN fires after 1 ms, with only a warning on stderr. A task whose
 * `timeout_sec = 3000000` would then have its verifier cut at once and a correct fix
 * graded unsolved. So every timeout a task file or a flag gives is refused at load above
 * `MAX_TIMEOUT_S`, and the timer helpers refuse a delay Node would not keep.
 */

/** The longest timeout a task or a flag may ask for, in seconds: one day (far below Node's 24.8). */
export const MAX_TIMEOUT_S = 86_400;

/** The longest delay Node's setTimeout keeps (2^31−1 ms). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why `seconds` is not a timeout probe accepts, or undefined when it is (positive, finite, at most MAX_TIMEOUT_S). */
export function timeoutProblem(seconds: unknown): string | undefined {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || !(seconds > 0))
    return `must be a positive number, not ${JSON.stringify(seconds)}`;
  if (seconds > MAX_TIMEOUT_S)
    return `${seconds} s is more than the ${MAX_TIMEOUT_S} s (one day) a timeout may be (Node's timers would fire at once)`;
  return undefined;
}

/**
 * setTimeout for a delay Node keeps. A delay it would turn into 1 ms is a bug in probe
 * (the inputs' timeouts are checked at load), so it throws rather than fire early.
 */
export function boundedTimeout(callback: () => void, ms: number): NodeJS.Timeout {
  return setTimeout(callback, keptDelay(ms));
}

/**
 * `ms`, when Node's timers keep it; a RangeError otherwise. Called before a command starts,
 * so a delay that would be refused never leaves a started process nobody waits for.
 */
export function keptDelay(ms: number): number {
  if (!(ms >= 0 && ms <= MAX_TIMER_MS))
    throw new RangeError(`a timer of ${ms} ms is beyond what Node keeps (0 to ${MAX_TIMER_MS} ms): it would fire at once`);
  return ms;
}

/** Waits `ms` (bounded as `boundedTimeout`). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => boundedTimeout(resolve, ms));
}
