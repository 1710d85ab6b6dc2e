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
export function splitContinuations(
  context: string,
  continuations: string[],
  encode: (text: string) => number[],
  options: BoundaryOptions = {},
): SplitPair[] {
  const trimmed = context.replace(/\s+$/u, '');
  const moved = context.slice(trimmed.length);
  const tail = options.keepTokens === undefined ? undefined : boundedTail(trimmed, options.keepTokens, encode);
  // What is tokenised: the whole context, or a tail of it long enough for the window.
  const text = tail ? trimmed.slice(tail.start) : trimmed;
  const encoded = tail?.tokens ?? encode(text);
  let encodeWhole = (t: string) => encode(text + t);
  // Without the anchor, encode sees only the context and each context + continuation (what a remote tokeniser was asked).
  const anchor = continuations.length > 1 && options.anchor !== false ? text.lastIndexOf('\n', text.length - ANCHOR_DISTANCE) + 1 : 0;
  if (anchor > 0) {
    const head = encode(text.slice(0, anchor));
    const rest = text.slice(anchor);
    const clean = [...head, ...encode(rest)];
    if (clean.length === encoded.length && clean.every((t, i) => t === encoded[i])) {
      encodeWhole = (t: string) => [...head, ...encode(rest + t)];
    }
  }
  const pairs = continuations.map((c) => {
    const whole = encodeWhole(moved + c);
    const pair = { context: trimmed, continuation: moved + c, contextTokens: encoded, continuationTokens: whole.slice(encoded.length) };
    return pair.continuationTokens.length > 0 || pair.continuation === '' ? pair : splitAtCommonPrefix(pair, whole);
  });
  if (!tail) return pairs;
  // The tail's first tokens stand for a cut, not for the text: keep only those that agree with the whole encoding.
  const kept = encoded.slice(tail.synced);
  return pairs.map((p) => ({ ...p, contextTokens: p.contextTokens === encoded ? kept : p.contextTokens.slice(tail.synced) }));
}

export interface BoundaryOptions {
  /** Split the context at an anchor and tokenise it once for all options (default true). */
  anchor?: boolean;
  /**
   * The most context tokens the caller can use (its window). A context far longer is not
   * tokenised whole: only a tail that yields more than this many tokens is, and the
   * context tokens returned are the tail's, which equal the whole encoding's last ones.
   */
  keepTokens?: number;
}

/** Characters per token a first tail allows for (generous: BPE averages about 4, byte-level 1); doubled while short. */
const TAIL_CHARS_PER_TOKEN = 8;
/** How far a cut may move forward to land on a line start, or else on whitespace, rather than inside a word. */
const CUT_SLACK = 1024;

/**
 * How far after the tail's cut the check cut is made: a prime. A long run of one character
 * tokenises periodically (merges of 2, 4, 8 … characters from wherever it starts), so two
 * cuts inside it a multiple of the period apart would agree with each other and not with
 * the whole text; a prime distance is a multiple of no such period.
 */
const CHECK_DISTANCE = 1021;

/** Tokens of `text.slice(start)`; from index `synced` on they are the last tokens of `encode(text)`. */
export interface Tail {
  start: number;
  tokens: number[];
  synced: number;
}

/**
 * A bounded tail of `text` that holds more than `keepTokens` tokens the whole encoding
 * would also end with, or undefined when the text is short enough to encode whole.
 *
 * A context is left-truncated to the window anyway, so megabytes before its last window's
 * worth cannot change a score; tokenising them costs seconds per megabyte and gigabytes of
 * memory. Tokenisers resynchronise shortly after a cut (pre-tokens are local; a long
 * whitespace run or word may take a few tokens), so the tail is encoded from two cuts a
 * little apart (CHECK_DISTANCE) and only the tokens both encodings end with are kept:
 * where they agree, the cut no longer matters. A tail without enough agreed tokens
 * doubles, up to the whole text, so a context that fits the window is always encoded
 * whole and scores as before.
 */
export function boundedTail(text: string, keepTokens: number, encode: (text: string) => number[]): Tail | undefined {
  for (let chars = keepTokens * TAIL_CHARS_PER_TOKEN + 4 * CUT_SLACK; chars < text.length; chars *= 2) {
    const start = cutAt(text, text.length - chars);
    const tokens = encode(text.slice(start));
    const check = encode(text.slice(cutAt(text, start + CHECK_DISTANCE)));
    let common = 0;
    while (common < check.length && tokens[tokens.length - 1 - common] === check[check.length - 1 - common]) common++;
    // More than keepTokens, so that a caller that keeps a window's worth still sees the context as truncated.
    if (common > keepTokens) return { start, tokens, synced: tokens.length - common };
  }
  return undefined;
}

/** The tokens of `text`, or of a bounded tail of it when only its last `keepTokens` can matter (see boundedTail). */
export function encodeTail(text: string, keepTokens: number, encode: (text: string) => number[]): number[] {
  const tail = boundedTail(text, keepTokens, encode);
  return tail ? tail.tokens.slice(tail.synced) : encode(text);
}

/** A cut at or after `at`: the next line start, else the next whitespace, within CUT_SLACK; never inside a surrogate pair. */
function cutAt(text: string, at: number): number {
  const window = text.slice(at, at + CUT_SLACK);
  const line = window.indexOf('\n');
  if (line >= 0) return at + line + 1;
  const space = window.search(/\s/u);
  if (space >= 0) return at + space;
  const code = text.charCodeAt(at);
  return code >= 0xdc00 && code <= 0xdfff ? at + 1 : at;
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
