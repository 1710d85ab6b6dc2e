/**
 * Seeded pseudo-random numbers (xoshiro128**, seeded through splitmix32), so that
 * sampling and generated data are reproducible from a seed alone on any machine.
 */
export interface Rng {
  /** Uniform in [0, 1) with 53 bits of resolution. */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
}

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** FNV-1a over the parts, so `(seed, index)` pairs map to independent streams. */
function mixSeed(parts: Array<number | string>): number {
  let h = 0x811c9dc5;
  for (const part of parts) {
    const text = `${typeof part}:${part};`;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  }
  return h;
}

/** A 32-bit seed derived from several parts: independent streams for (seed, run, step). */
export function deriveSeed(...parts: Array<number | string>): number {
  return mixSeed(parts);
}

export function createRng(...seedParts: Array<number | string>): Rng {
  const init = splitmix32(mixSeed(seedParts));
  const s = new Uint32Array([init(), init(), init(), init()]);
  const rotl = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;
  const nextU32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1]! << 9) >>> 0;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  };
  const next = () => ((nextU32() >>> 5) * 67108864 + (nextU32() >>> 6)) / 9007199254740992;
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (items) => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[Math.floor(next() * items.length)]!;
    },
  };
}
