/**
 * Decisive-Action BPB: bits per UTF-8 byte of the gold action given its context.
 * Per item `nats / (ln 2 · bytes)`; per checkpoint pooled `Σ nats / (ln 2 · Σ bytes)`.
 */
import type { CompletionBackend } from '../backends/types.ts';
import { scoreContinuation } from '../backends/single.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { mapLimit } from '../util/pool.ts';
import { memoized, type ItemHooks } from './memo.ts';

export interface BpbItem {
  id: string;
  task: string;
  bpb: number;
  nats: number;
  bytes: number;
  tokens: number;
  truncated: boolean;
  greedy: boolean;
}

export interface BpbResult {
  checkpoint: string;
  backend: string;
  bpb: number;
  nats: number;
  bytes: number;
  tokens: number;
  items: BpbItem[];
}

export function bitsPerByte(nats: number, bytes: number): number {
  return bytes === 0 ? NaN : nats / (Math.LN2 * bytes);
}

/** What BPB reads of an item: any text scored after its context (a probe item, or a piece of plain code). */
export type BpbInput = Pick<ProbeItem, 'id' | 'task' | 'context' | 'gold'>;

async function scoreItem(backend: CompletionBackend, item: BpbInput): Promise<BpbItem> {
  const r = await scoreContinuation(backend, item.context, item.gold, `probe item ${item.id}`);
  const nats = -r.tokenLogprobs.reduce((a, b) => a + b, 0);
  return {
    id: item.id,
    task: item.task,
    bpb: bitsPerByte(nats, r.bytes),
    nats,
    bytes: r.bytes,
    tokens: r.tokens.length,
    truncated: r.truncated,
    greedy: r.greedy,
  };
}

export async function scoreBpb(
  checkpoint: string,
  backend: CompletionBackend,
  items: readonly BpbInput[],
  hooks: ItemHooks<BpbItem> = {},
): Promise<BpbResult> {
  // Items go to the backend as it can take them (a server: several at once); results keep the items' order.
  const scored = await mapLimit(items, backend.concurrency ?? 1, async (item) => {
    const result = await memoized(hooks.memo, item.id, () => scoreItem(backend, item));
    hooks.onItem?.(item.id);
    return result;
  });
  const nats = scored.reduce((a, i) => a + i.nats, 0);
  const bytes = scored.reduce((a, i) => a + i.bytes, 0);
  const tokens = scored.reduce((a, i) => a + i.tokens, 0);
  return { checkpoint, backend: backend.id, bpb: bitsPerByte(nats, bytes), nats, bytes, tokens, items: scored };
}

/** Checkpoint names, lowest (best) BPB first. */
export function rankByBpb(results: BpbResult[]): string[] {
  return [...results].sort((a, b) => a.bpb - b.bpb).map((r) => r.checkpoint);
}
