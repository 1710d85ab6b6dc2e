/**
 * Orders that show ties as ties. Three checkpoints at 30% are not first, second and third:
 * they share a place (competition ranking, "2=" for each, the next one 5th), and a chain
 * writes them `a = b = c`. A value that is not a number (no result) comes last, as one group.
 */

/** Items grouped best first by `score` (equal scores in one group; items without a finite score last, together). */
export function tiedGroups<T>(items: readonly T[], score: (item: T) => number | null | undefined, better: 'higher' | 'lower'): T[][] {
  const scored = items.filter((item) => Number.isFinite(score(item)));
  const unscored = items.filter((item) => !Number.isFinite(score(item)));
  const sign = better === 'higher' ? -1 : 1;
  const sorted = [...scored].sort((a, b) => sign * (score(a)! - score(b)!));
  const groups: T[][] = [];
  for (const item of sorted) {
    const last = groups.at(-1);
    if (last && score(last[0]!) === score(item)) last.push(item);
    else groups.push([item]);
  }
  if (unscored.length) groups.push(unscored);
  return groups;
}

/** Each item with its place, best first: `1`, `2=`, `2=`, `4` (competition ranking: a tie shares the place and skips the next). */
export function rankedWithTies<T>(
  items: readonly T[],
  score: (item: T) => number | null | undefined,
  better: 'higher' | 'lower',
): Array<{ item: T; rank: string }> {
  const out: Array<{ item: T; rank: string }> = [];
  for (const group of tiedGroups(items, score, better)) {
    const place = out.length + 1;
    for (const item of group) out.push({ item, rank: group.length > 1 ? `${place}=` : String(place) });
  }
  return out;
}

/** `a › b = c › d`; every item tied is said so rather than shown as an order. */
export function tiedChain(groups: readonly (readonly string[])[]): string {
  const chain = groups.map((group) => group.join(' = ')).join(' › ');
  return groups.length === 1 && groups[0]!.length > 1 ? `${chain} (all tied)` : chain;
}
