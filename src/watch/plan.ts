/**
 * Which checkpoints of a watch get the expensive rungs (pass@K and ASAP) besides the cheap
 * ones: the first of each training run, then every k-th, and any whose Decisive-Action BPB
 * has moved by at least the threshold since the last one that got them — so a run that
 * suddenly changes is looked at closely without sampling every checkpoint.
 */

export interface HeavyRule {
  /** Every k-th checkpoint of a training run (0: by the threshold only). */
  every: number;
  /** Bits per byte of Decisive-Action BPB that count as a move (Infinity: by count only). */
  move: number;
}

/** A checkpoint of the same training run already decided, in the order they were. */
export interface Decided {
  checkpoint: string;
  bpb: number | null;
  heavy: boolean;
}

export interface HeavyDecision {
  heavy: boolean;
  /** Why, in words a log line and the report show. */
  reason: string;
}

const ordinal = (n: number) => `${n}${n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th')}`;

/** The decision for the next checkpoint of a training run, given those decided before it (`bpb` null: it could not be scored). */
export function decideHeavy(before: readonly Decided[], next: { bpb: number | null }, rule: HeavyRule): HeavyDecision {
  const index = before.length; // 0-based position in its training run
  if (next.bpb === null) return { heavy: true, reason: 'no cheap score to decide by: pass@K and ASAP' };
  if (index === 0) return { heavy: true, reason: 'the first of its training run' };
  if (rule.every > 0 && index % rule.every === 0)
    return { heavy: true, reason: `every ${ordinal(rule.every)} checkpoint (this is the ${ordinal(index + 1)})` };
  const last = [...before].reverse().find((d) => d.heavy && d.bpb !== null);
  if (last && Math.abs(next.bpb - last.bpb!) >= rule.move)
    return {
      heavy: true,
      reason: `bpb moved ${Math.abs(next.bpb - last.bpb!).toFixed(3)} since ${last.checkpoint} (≥ ${rule.move})`,
    };
  const nextByCount = rule.every > 0 ? `the ${ordinal(index + rule.every - (index % rule.every) + 1)} checkpoint` : null;
  const byMove = last && Number.isFinite(rule.move) ? `a bpb ${rule.move} away from ${last.bpb!.toFixed(3)}` : null;
  return { heavy: false, reason: `next: ${[nextByCount, byMove].filter(Boolean).join(', or ') || 'none'}` };
}
