/** Unbiased pass@k (Chen et al. 2021): 1 − C(n−c, k) / C(n, k), computed as a stable product. */
export function passAtK(n: number, c: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(c) || !Number.isInteger(k) || n < 0 || c < 0 || c > n || k < 1) {
    throw new RangeError(`pass@k needs integers 0 ≤ c ≤ n and k ≥ 1 (n=${n}, c=${c}, k=${k})`);
  }
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples, got ${n}`);
  if (n - c < k) return 1;
  // C(n−c, k) / C(n, k) = Π_{i=n−c+1}^{n} (1 − k / i)
  let fail = 1;
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i;
  return 1 - fail;
}

/** Mean pass@k over items, each with its own n and c. */
export function meanPassAtK(items: Array<{ n: number; c: number }>, k: number): number {
  if (items.length === 0) return NaN;
  return items.reduce((sum, it) => sum + passAtK(it.n, it.c, k), 0) / items.length;
}
