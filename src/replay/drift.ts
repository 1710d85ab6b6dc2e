/**
 * Replay drift: how far a replayed observation is from the recorded one, as
 * 1 − 2·LCS(lines) / (lines_a + lines_b) over normalised lines (0 = identical).
 */
function lines(text: string): string[] {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l, i, all) => l !== '' || i < all.length - 1);
}

export function drift(replayed: string, recorded: string): number {
  const a = lines(replayed);
  const b = lines(recorded);
  if (a.length + b.length === 0) return 0;
  let prev = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let j = 1; j <= b.length; j++) row[j] = a[i - 1] === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, row[j - 1]!);
    prev = row;
  }
  return 1 - (2 * prev[b.length]!) / (a.length + b.length);
}
