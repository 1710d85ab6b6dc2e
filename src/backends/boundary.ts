/**
 * lm-evaluation-harness's context/continuation boundary rule: trailing whitespace of
 * the context moves into the continuation, `context + continuation` is tokenised once,
 * and the continuation's tokens are the whole encoding past the context's own token
 * count. BPE merges across the boundary are thereby resolved the way the harness does.
 */
export interface SplitPair {
  /** Context with its trailing whitespace removed. */
  context: string;
  /** Continuation with that whitespace prepended: the text actually scored. */
  continuation: string;
  contextTokens: number[];
  continuationTokens: number[];
}

export function splitPair(context: string, continuation: string, encode: (text: string) => number[]): SplitPair {
  const trimmed = context.replace(/\s+$/u, '');
  const moved = context.slice(trimmed.length) + continuation;
  const whole = encode(trimmed + moved);
  const contextTokens = encode(trimmed);
  return { context: trimmed, continuation: moved, contextTokens, continuationTokens: whole.slice(contextTokens.length) };
}
