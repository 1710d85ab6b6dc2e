/**
 * A rung's cost in tokens: the backend it talks to, wrapped to count what it asks of the
 * model — tokens read to score (contexts and continuations, as the checkpoint's tokenizer
 * splits them) and tokens sampled. Calls answered from the result cache count too: this
 * is the rung's work, not the machine's.
 */
import type { CompletionBackend } from '../backends/types.ts';

export interface TokenCount {
  scored: number;
  sampled: number;
}

export function countingBackend(backend: CompletionBackend): { backend: CompletionBackend; count: TokenCount } {
  const count: TokenCount = { scored: 0, sampled: 0 };
  const wrapped: CompletionBackend = {
    id: backend.id,
    ...(backend.concurrency ? { concurrency: backend.concurrency } : {}),
    encode: (text) => backend.encode(text),
    score: async (requests) => {
      const results = await backend.score(requests);
      requests.forEach((r, i) => {
        // The context is read once per request; each continuation's scored tokens come back with it.
        count.scored += backend.encode(r.context).length + (results[i] ?? []).reduce((a, s) => a + s.tokens.length, 0);
      });
      return results;
    },
    sample: async (requests) => {
      const samples = await backend.sample(requests);
      for (const group of samples) for (const s of group) count.sampled += s.tokens.length;
      return samples;
    },
    close: () => backend.close(),
    ...(backend.bos ? { bos: () => backend.bos!() } : {}),
  };
  return { backend: wrapped, count };
}
