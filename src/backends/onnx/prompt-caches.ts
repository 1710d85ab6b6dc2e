/**
 * Caches of recently fed prompts, so a prompt that extends one (the next step of an ASAP
 * episode or of a pass@K rollout: the last prompt, the model's action, its output) feeds
 * only what is new. An ASAP episode of 30 steps at a 2K-token context otherwise feeds
 * some 50K prompt tokens to sample about 1K.
 *
 * Bit for bit what a fresh feed computes: the reused keys and values are those of the
 * tokens the two prompts share, which causal attention computed from those tokens alone,
 * and a pass of several tokens computes each position's keys exactly as a pass with more
 * or fewer tokens after it does (trailing masked keys add exact zeros to the softmax;
 * checked on the real checkpoints). A one-token pass takes another kernel path and rounds
 * differently, so feeds never end in a one-token chunk (backend.ts) and a prompt is only
 * continued from a shared head when at least two tokens remain to feed (also when it is
 * itself the head of a remembered prompt: its last logits row is not remembered).
 */
import { bytesPerCachedToken, headOf } from './kv-rows.ts';
import type { KvCache } from './graph.ts';

export interface FedPrompt {
  ids: number[];
  cache: KvCache;
  lastRow: Float32Array;
}

/** Cache bytes the remembered prompts may hold. */
const BUDGET_BYTES = 256 * 2 ** 20;
const MAX_PROMPTS = 32;

export class PromptCaches {
  private entries: FedPrompt[] = [];

  /** The longest head of `ids` some remembered prompt shares, as a cache — or the prompt itself when it was fed before. */
  lookup(ids: number[]): { exact: FedPrompt } | { head: KvCache } | undefined {
    let best: FedPrompt | undefined;
    let shared = 0;
    for (const entry of this.entries) {
      const n = commonPrefix(entry.ids, ids);
      if (n === ids.length && n === entry.ids.length) {
        this.touch(entry);
        return { exact: entry };
      }
      if (n > shared) {
        shared = n;
        best = entry;
      }
    }
    // At least two tokens are fed: the last one's logits row is needed (the prompt may be a head of a longer one), and a
    // one-token remainder would be fed alone, which rounds differently.
    const usable = Math.min(shared, ids.length - 2);
    if (!best || usable < 1) return undefined;
    this.touch(best);
    return { head: headOf(best.cache, usable) };
  }

  remember(fed: FedPrompt): void {
    this.entries.push(fed);
    const bytes = (e: FedPrompt) => e.cache.length * bytesPerCachedToken(e.cache);
    let total = this.entries.reduce((sum, e) => sum + bytes(e), 0);
    while (this.entries.length > 1 && (this.entries.length > MAX_PROMPTS || total > BUDGET_BYTES)) total -= bytes(this.entries.shift()!);
  }

  private touch(entry: FedPrompt): void {
    this.entries = [...this.entries.filter((e) => e !== entry), entry];
  }
}

function commonPrefix(a: number[], b: number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
