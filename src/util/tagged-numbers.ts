/**
 * JSON for numbers JSON cannot hold (NaN, ±Infinity: the log-likelihood of an impossible
 * token): written as `{"$number": "-Infinity"}` and read back exactly. The run logs and the
 * result cache both store them this way.
 */
const NUMBER_TAG = '$number';

/** A `JSON.stringify` replacer that writes NaN and ±Infinity tagged. */
export function encode(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? { [NUMBER_TAG]: String(value) } : value;
}

/** The `JSON.parse` reviver that reads `encode`'s tags back as numbers. */
export function decode(_key: string, value: unknown): unknown {
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === NUMBER_TAG) return Number((value as Record<string, string>)[NUMBER_TAG]);
  }
  return value;
}
