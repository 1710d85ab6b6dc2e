/**
 * The cheap rungs, scored on every checkpoint: general code BPB (plain held-out code, the
 * baseline), Decisive-Action BPB and Patch MCQ (likelihood), in that order.
 */
import { scoreBpb, type BpbItem, type BpbResult } from '../../probes/bpb.ts';
import type { CodePiece } from '../../probes/code-text.ts';
import { scoreMcq, type McqItem, type McqResult } from '../../probes/mcq.ts';
import type { ProbeItem } from '../../schema/probe-item.ts';
import type { RungScorer } from './scorer.ts';

export function scoreCodeBpb(checkpoint: string, code: CodePiece[], scorer: RungScorer): Promise<BpbResult> {
  return scorer<BpbResult, BpbItem>('code-bpb', (backend, hooks) => scoreBpb(checkpoint, backend, code, hooks));
}

/** Decisive-Action BPB, then Patch MCQ, on the probe items. */
export async function scoreBpbAndMcq(
  checkpoint: string,
  items: ProbeItem[],
  seed: number,
  scorer: RungScorer,
): Promise<{ bpb: BpbResult; mcq: McqResult }> {
  const bpb = await scorer<BpbResult, BpbItem>('bpb', (backend, hooks) => scoreBpb(checkpoint, backend, items, hooks));
  const mcq = await scorer<McqResult, McqItem>('mcq', (backend, hooks) => scoreMcq(checkpoint, backend, items, 'likelihood', seed, hooks));
  return { bpb, mcq };
}
