/**
 * How deeply a parsed JSON value nests, found without recursion. `JSON.parse` takes any
 * depth, but what reads the value next (`JSON.stringify`, zod, the importers) recurses and
 * ends in `Maximum call stack size exceeded`, a crash of the whole run for one bad file. A
 * value is checked here first, so a too-deep one is refused as the bad input it is.
 */

/** Deeper than any trajectory, task or dataset row a scaffold writes (they nest a dozen levels), far below the stack's reach. */
export const MAX_JSON_DEPTH = 200;

/** Whether `value` nests arrays/objects more than `limit` levels deep (a scalar is depth 0). */
export function nestsDeeperThan(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > limit) return true;
    const children = Array.isArray(v) ? v : v instanceof Uint8Array || v instanceof Date ? [] : Object.values(v);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}
