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
  const [pair] = splitContinuations(context, [continuation], encode);
  return pair!;
}

/** Characters kept between the anchor and the end of the context, so no merge or pre-token can reach across. */
const ANCHOR_DISTANCE = 256;

/**
 * The rule for several continuations of one context, tokenising the long context once.
 *
 * Encoding `context + continuation` in full for every option would re-tokenise the whole
 * context per option. Instead the context is cut at an anchor (a line start well before
 * its end) where its own encoding splits cleanly — `encode(head) ++ encode(tail)` equals
 * `encode(context)` — and only `tail + continuation` is encoded per option. Tokenizers
 * merge within pre-tokens that look at most a character ahead, so text hundreds of
 * characters after the anchor cannot change the tokens before it; where the context
 * does not split cleanly, every option is encoded in full.
 */
export function splitContinuations(context: string, continuations: string[], encode: (text: string) => number[], options: { anchor?: boolean } = {}): SplitPair[] {
  const trimmed = context.replace(/\s+$/u, '');
  const moved = context.slice(trimmed.length);
  const contextTokens = encode(trimmed);
  let encodeWhole = (text: string) => encode(trimmed + text);
  // Without the anchor, encode sees only the context and each context + continuation (what a remote tokeniser was asked).
  const anchor = continuations.length > 1 && options.anchor !== false ? trimmed.lastIndexOf('\n', trimmed.length - ANCHOR_DISTANCE) + 1 : 0;
  if (anchor > 0) {
    const head = encode(trimmed.slice(0, anchor));
    const tail = trimmed.slice(anchor);
    const clean = [...head, ...encode(tail)];
    if (clean.length === contextTokens.length && clean.every((t, i) => t === contextTokens[i])) {
      encodeWhole = (text: string) => [...head, ...encode(tail + text)];
    }
  }
  return continuations.map((c) => {
    const whole = encodeWhole(moved + c);
    const pair = { context: trimmed, continuation: moved + c, contextTokens, continuationTokens: whole.slice(contextTokens.length) };
    return pair.continuationTokens.length > 0 || pair.continuation === '' ? pair : splitAtCommonPrefix(pair, whole);
  });
}

/**
 * When a merge across the boundary swallows the whole continuation (context "return sel",
 * continuation "f" → one token "Ġself"), the harness's split would score nothing and
 * report 0 bits. Split instead after the longest prefix that the context and the whole
 * encoding share, so the merged token is scored as part of the continuation.
 */
function splitAtCommonPrefix(pair: SplitPair, whole: number[]): SplitPair {
  let common = 0;
  while (common < whole.length - 1 && whole[common] === pair.contextTokens[common]) common++;
  return { ...pair, contextTokens: whole.slice(0, common), continuationTokens: whole.slice(common) };
}
