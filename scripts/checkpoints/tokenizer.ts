/**
 * Byte-level BPE tokenizers in Hugging Face `tokenizer.json` layout (GPT-2's byte→unicode
 * alphabet, so every byte string is encodable), plus a deterministic BPE trainer.
 */

export const EOS_TOKEN = '<|endoftext|>';

/** GPT-2's reversible byte → printable-unicode map. */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = printable.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  }
  return table;
}

/** GPT-2's pre-tokenisation pattern, as the ByteLevel pre-tokenizer applies it. */
const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

export interface TokenizerSpec {
  /** Merges in rank order, each a pair of byte-level symbols. */
  merges: Array<[string, string]>;
  /** Unreachable vocabulary entries appended after the merges (to reach a target vocab size). */
  fillers?: number;
}

export interface BuiltTokenizer {
  json: object;
  config: object;
  vocabSize: number;
  eosId: number;
  /** Symbol string of every id, for tests and table lookups. */
  symbols: string[];
}

/** ids: 0..255 the bytes, then one per merge, then fillers, then EOS. */
export function buildTokenizer(spec: TokenizerSpec): BuiltTokenizer {
  const b2u = bytesToUnicode();
  const symbols = [...b2u];
  // Two merges can spell the same symbol; like HF, they then share one id.
  for (const [a, b] of spec.merges) if (!symbols.includes(a + b)) symbols.push(a + b);
  for (let i = 0; i < (spec.fillers ?? 0); i++) symbols.push(`<|filler_${i}|>`);
  const eosId = symbols.length;
  symbols.push(EOS_TOKEN);
  const vocab: Record<string, number> = {};
  symbols.forEach((s, id) => {
    if (s in vocab) throw new Error(`duplicate vocabulary entry ${JSON.stringify(s)}`);
    vocab[s] = id;
  });
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [{ id: eosId, content: EOS_TOKEN, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: spec.merges,
    },
  };
  const config = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    bos_token: EOS_TOKEN,
    eos_token: EOS_TOKEN,
    unk_token: null,
    pad_token: EOS_TOKEN,
    add_bos_token: false,
    add_eos_token: false,
    clean_up_tokenization_spaces: false,
    model_max_length: 1_000_000,
  };
  return { json, config, vocabSize: symbols.length, eosId, symbols };
}

/**
 * Trains `count` BPE merges on `texts`. Ties go to the lexicographically smallest pair,
 * so the result depends only on the input.
 */
export function trainBpe(texts: string[], count: number): Array<[string, string]> {
  const b2u = bytesToUnicode();
  const encoder = new TextEncoder();
  const wordFreq = new Map<string, number>();
  for (const text of texts) {
    for (const match of text.matchAll(GPT2_SPLIT)) {
      const word = Array.from(encoder.encode(match[0]), (b) => b2u[b]).join('');
      wordFreq.set(word, (wordFreq.get(word) ?? 0) + 1);
    }
  }
  const words = [...wordFreq.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([w, f]) => ({ parts: [...w], freq: f }));
  const merges: Array<[string, string]> = [];
  for (let m = 0; m < count; m++) {
    const pairs = new Map<string, number>();
    for (const { parts, freq } of words) {
      for (let i = 0; i + 1 < parts.length; i++) {
        const key = `${parts[i]}\u0000${parts[i + 1]}`;
        pairs.set(key, (pairs.get(key) ?? 0) + freq);
      }
    }
    let best: string | undefined;
    let bestFreq = 0;
    for (const [key, freq] of pairs) {
      if (freq > bestFreq || (freq === bestFreq && best !== undefined && key < best)) {
        best = key;
        bestFreq = freq;
      }
    }
    if (best === undefined || bestFreq < 2) break;
    const [a, b] = best.split('\u0000') as [string, string];
    merges.push([a, b]);
    for (const word of words) {
      const merged: string[] = [];
      for (let i = 0; i < word.parts.length; i++) {
        if (i + 1 < word.parts.length && word.parts[i] === a && word.parts[i + 1] === b) {
          merged.push(a + b);
          i++;
        } else merged.push(word.parts[i]!);
      }
      word.parts = merged;
    }
  }
  return merges;
}
