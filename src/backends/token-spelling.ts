/**
 * What a checkpoint's vocabulary can spell, for checking a server's completion against the
 * tokens it was allowed: the fewest tokens that spell a text, and whether a text is what a
 * list of token ids reads as.
 *
 * Re-encoding a completion does not count the tokens that produced it. A model may write a
 * text in pieces its tokenizer would merge, or merge what it would split: on the s40 GGUF
 * rung, 277 of 698 llama-server samples re-encoded to more tokens than were generated (by
 * up to 7), 109 to fewer. The fewest tokens that spell the text is a bound no generation of
 * it can beat, so a completion it puts over the budget was not generated within it.
 */

/** A tokenizer's bytes per token (CheckpointTokenizer), where its decoder makes them well defined. */
export interface TokenBytes {
  readonly vocabSize: number;
  bytesOf(id: number): Uint8Array | undefined;
}

const utf8 = new TextEncoder();
const REPLACEMENT = '\uFFFD';

/** Text with U+FFFD taken out: where a server or decoder replaced bytes that are not UTF-8, which and how many is not comparable. */
function withoutReplacements(text: string): string {
  return text.split(REPLACEMENT).join('');
}

export class TokenSpelling {
  /** A byte trie of every token's bytes: the child of `node` on `byte` is at key `node * 256 + byte`; the root is 0. */
  private readonly children = new Map<number, number>();
  /** Trie nodes where some token's bytes end. */
  private readonly ends = new Set<number>();

  private constructor(private readonly tokens: TokenBytes) {
    let nodes = 1;
    for (let id = 0; id < tokens.vocabSize; id++) {
      const bytes = tokens.bytesOf(id);
      if (!bytes || bytes.length === 0) continue;
      let node = 0;
      for (const byte of bytes) {
        const key = node * 256 + byte;
        let next = this.children.get(key);
        if (next === undefined) {
          next = nodes++;
          this.children.set(key, next);
        }
        node = next;
      }
      this.ends.add(node);
    }
  }

  /** The spelling of a tokenizer's vocabulary; undefined where it cannot say the bytes of its tokens (a decoder other than byte-level or byte-fallback). */
  static of(tokens: TokenBytes): TokenSpelling | undefined {
    const spelling = new TokenSpelling(tokens);
    return spelling.ends.size === 0 ? undefined : spelling;
  }

  /**
   * The fewest tokens that spell `text`, or undefined where some byte of it no token spells.
   * A U+FFFD stands for bytes that are not UTF-8 and is spelled for free; a token may span
   * one, joining the pieces on either side, so each takes one token off the pieces' sum.
   */
  fewestTokens(text: string): number | undefined {
    const pieces = text.split(REPLACEMENT);
    let total = 0;
    for (const piece of pieces) {
      const fewest = this.fewestFor(utf8.encode(piece));
      if (fewest === undefined) return undefined;
      total += fewest;
    }
    return Math.max(0, total - (pieces.length - 1));
  }

  /** Shortest path over byte positions, each step one token of the trie. */
  private fewestFor(bytes: Uint8Array): number | undefined {
    const best = new Array<number>(bytes.length + 1).fill(Infinity);
    best[0] = 0;
    for (let start = 0; start < bytes.length; start++) {
      const here = best[start]!;
      if (here === Infinity) continue;
      let node = 0;
      for (let end = start; end < bytes.length; end++) {
        const next = this.children.get(node * 256 + bytes[end]!);
        if (next === undefined) break;
        node = next;
        if (this.ends.has(node) && here + 1 < best[end + 1]!) best[end + 1] = here + 1;
      }
    }
    const fewest = best[bytes.length]!;
    return fewest === Infinity ? undefined : fewest;
  }

  /**
   * Whether `text` can be what `ids` read as: a prefix of their bytes decoded (the text stops
   * before a stop string whose tokens were generated, or before bytes a server held back).
   * Undefined where some id has no known bytes.
   */
  readsAs(ids: readonly number[], text: string): boolean | undefined {
    const parts: Uint8Array[] = [];
    for (const id of ids) {
      const bytes = id >= 0 && id < this.tokens.vocabSize ? this.tokens.bytesOf(id) : undefined;
      if (!bytes) return undefined;
      parts.push(bytes);
    }
    const decoded = new TextDecoder().decode(Buffer.concat(parts));
    return withoutReplacements(decoded).startsWith(withoutReplacements(text));
  }
}
