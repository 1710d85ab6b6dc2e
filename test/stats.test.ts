/** Estimators against exact values. */
import { describe, expect, it } from 'vitest';
import { averageRanks, bootstrap, kendallTauB, pearson, spearman } from '../src/stats/correlation.ts';
import { meanPassAtK, passAtK } from '../src/stats/pass-at-k.ts';
import { createRng } from '../src/util/rng.ts';

/** C(n, k) exactly with BigInt, for reference. */
function choose(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let r = 1n;
  for (let i = 1; i <= k; i++) r = (r * BigInt(n - k + i)) / BigInt(i);
  return r;
}

describe('pass@k', () => {
  it('matches 1 − C(n−c,k)/C(n,k) computed exactly', () => {
    for (const [n, c, k] of [
      [16, 3, 1],
      [16, 3, 4],
      [16, 3, 8],
      [20, 7, 5],
      [200, 13, 10],
      [10, 0, 3],
      [10, 10, 3],
    ] as const) {
      const exact = 1 - Number((choose(n - c, k) * 10n ** 15n) / choose(n, k)) / 1e15;
      expect(passAtK(n, c, k)).toBeCloseTo(exact, 12);
    }
  });
  it('is 1 when fewer than k samples failed (n − c < k)', () => {
    expect(passAtK(16, 14, 4)).toBe(1);
    expect(passAtK(8, 8, 8)).toBe(1);
    expect(passAtK(4, 1, 4)).toBe(1);
  });
  it('pass@1 is c/n and pass@n is 1 iff c > 0', () => {
    expect(passAtK(16, 5, 1)).toBeCloseTo(5 / 16, 15);
    expect(passAtK(16, 1, 16)).toBe(1);
    expect(passAtK(16, 0, 16)).toBe(0);
  });
  it('refuses impossible inputs', () => {
    expect(() => passAtK(4, 5, 1)).toThrow(RangeError);
    expect(() => passAtK(4, 1, 8)).toThrow(/at least 8 samples/);
  });
  it('averages over items', () => {
    expect(
      meanPassAtK(
        [
          { n: 4, c: 0 },
          { n: 4, c: 4 },
        ],
        1,
      ),
    ).toBe(0.5);
  });
});

describe('rank correlation', () => {
  it('average ranks share ties', () => {
    expect(averageRanks([10, 20, 20, 30])).toEqual([1, 2.5, 2.5, 4]);
  });
  it('Spearman without ties equals 1 − 6Σd²/(n(n²−1))', () => {
    // Textbook example: IQ vs hours of TV (Wikipedia, "Spearman's rank correlation coefficient").
    const iq = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110];
    const tv = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17];
    expect(spearman(iq, tv)).toBeCloseTo(-29 / 165, 12); // −0.17575…
  });
  it('Spearman with ties is Pearson on average ranks', () => {
    const x = [1, 2, 2, 3, 4];
    const y = [2, 1, 3, 3, 5];
    expect(spearman(x, y)).toBeCloseTo(pearson([1, 2.5, 2.5, 4, 5], [2, 1, 3.5, 3.5, 5]), 15);
    expect(spearman(x, y)).toBeCloseTo(0.7631578947368421, 12); // scipy.stats.spearmanr
  });
  it('Kendall tau-b with ties matches the textbook value', () => {
    // x = (1,2,2,3), y = (1,3,2,3): nc = 4, nd = 0, ties only in x: 1, only in y: 1 → 4/√(5·5) = 0.8
    expect(kendallTauB([1, 2, 2, 3], [1, 3, 2, 3])).toBeCloseTo(0.8, 15);
    expect(kendallTauB([1, 2, 3, 4, 5], [5, 4, 3, 2, 1])).toBe(-1);
    // scipy.stats.kendalltau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0]) = −0.47140452079103173
    expect(kendallTauB([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])).toBeCloseTo(-0.47140452079103173, 12);
  });
  it('Pearson of a perfect line is 1 and undefined for a constant', () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 15);
    expect(pearson([1, 1, 1], [2, 4, 6])).toBeNaN();
  });
});

describe('bootstrap', () => {
  it('brackets the estimate and is reproducible from the seed', () => {
    const pairs = Array.from({ length: 30 }, (_, i) => ({ x: i, y: i + ((i * 7) % 5) }));
    const stat = (s: typeof pairs) =>
      spearman(
        s.map((p) => p.x),
        s.map((p) => p.y),
      );
    const a = bootstrap(pairs, stat, createRng('boot', 1), 500);
    const b = bootstrap(pairs, stat, createRng('boot', 1), 500);
    expect(a).toEqual(b);
    expect(a.low).toBeLessThanOrEqual(a.estimate);
    expect(a.high).toBeGreaterThanOrEqual(a.estimate);
    expect(a.high).toBeLessThanOrEqual(1);
  });
});
