/**
 * The checkpoint's own tokenizer (transformers.js), plus a token → bytes table so that
 * sampling can decode incrementally without re-decoding the whole generation per token.
 */
import { createRequire } from 'node:module';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
import { describeCause, InputError } from '../../errors.ts';
import { BOS_PROBE_TEXT, prependedToken, type BosPolicy, type BosUse } from '../bos.ts';
import { type TokenizerFiles, tokenEntries, vocabSizeOf } from '../checkpoint-dir.ts';

/**
 * transformers.js is loaded on the first tokenizer, not at start-up: importing it costs half a second,
 * which every `probe --help` and every verb that opens no checkpoint would pay. Its CommonJS build loads
 * synchronously, so the constructor stays synchronous.
 */
let tokenizerClass: typeof PreTrainedTokenizer | undefined;
function preTrainedTokenizer(): typeof PreTrainedTokenizer {
  tokenizerClass ??= (createRequire(import.meta.url)('@huggingface/transformers') as typeof import('@huggingface/transformers'))
    .PreTrainedTokenizer;
  return tokenizerClass;
}

function gpt2ByteDecoder(): Map<string, number> {
  const map = new Map<string, number>();
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    map.set(String.fromCharCode(printable ? b : 256 + extra++), b);
  }
  return map;
}

function decoderTypes(decoder: unknown): string[] {
  if (!decoder || typeof decoder !== 'object') return [];
  const d = decoder as { type?: string; decoders?: unknown[] };
  return [d.type ?? '', ...(d.decoders ?? []).flatMap(decoderTypes)];
}

export class CheckpointTokenizer {
  private readonly inner: PreTrainedTokenizer;
  private readonly bytesById: Array<Uint8Array | undefined>;
  readonly eosIds: ReadonlySet<number>;
  /** Token used as the context when a context is empty (lm-evaluation-harness uses EOT). */
  readonly prefixId: number;
  readonly vocabSize: number;
  private readonly files: TokenizerFiles;

  constructor(files: TokenizerFiles) {
    this.files = files;
    const file = `${files.dir}/tokenizer.json`;
    try {
      this.inner = new (preTrainedTokenizer())(files.tokenizerJson, files.tokenizerConfig);
    } catch (error) {
      throw new InputError({ file }, `cannot build a tokenizer: ${describeCause(error)}`, { cause: error });
    }
    const entries = tokenEntries(files.tokenizerJson);
    this.vocabSize = vocabSizeOf(entries);
    this.bytesById = buildByteTable(
      entries,
      decoderTypes(files.tokenizerJson.decoder),
      new Set((files.tokenizerJson.added_tokens ?? []).map((t) => t.id)),
    );

    const eos = files.config.eos_token_id ?? this.inner.eos_token_id;
    this.eosIds = new Set((Array.isArray(eos) ? eos : eos == null ? [] : [eos]).filter((id): id is number => typeof id === 'number'));
    const prefix = this.inner.bos_token_id ?? files.config.bos_token_id ?? [...this.eosIds][0];
    if (prefix === undefined || prefix === null) {
      throw new InputError({ file, field: 'added_tokens' }, 'no BOS or EOS token to stand for an empty context');
    }
    this.prefixId = prefix;
  }

  encode(text: string): number[] {
    return this.inner.encode(text, { add_special_tokens: false });
  }

  /**
   * The BOS policy resolved for this tokenizer (bos.ts): `auto` is what it does itself — an
   * explicit boolean `add_bos_token` in tokenizer_config.json, else whether encoding with
   * special tokens prepends one; `always` needs a BOS token to exist.
   */
  bos(policy: BosPolicy): BosUse {
    const configFile = `${this.files.dir}/tokenizer_config.json`;
    const prepended = prependedToken(this.inner.encode(BOS_PROBE_TEXT, { add_special_tokens: true }), this.encode(BOS_PROBE_TEXT));
    const bosId = this.inner.bos_token_id ?? prepended;
    if (policy === 'never') return { policy, id: null, source: '--bos never' };
    if (policy === 'always') {
      if (bosId === undefined || bosId === null) {
        throw new InputError(
          { file: configFile, field: 'bos_token' },
          `--bos always: the tokenizer has no BOS token (no bos_token in tokenizer_config.json, and the post-processor in ${this.files.dir}/tokenizer.json prepends none)`,
        );
      }
      return { policy, id: bosId, source: '--bos always' };
    }
    const explicit = this.files.tokenizerConfig.add_bos_token;
    if (typeof explicit === 'boolean') {
      if (!explicit) return { policy, id: null, source: 'tokenizer_config.json add_bos_token: false' };
      if (bosId === undefined || bosId === null)
        throw new InputError(
          { file: configFile, field: 'add_bos_token' },
          'add_bos_token is true but the tokenizer has no BOS token (bos_token)',
        );
      return { policy, id: bosId, source: 'tokenizer_config.json add_bos_token: true' };
    }
    if (prepended !== undefined) return { policy, id: prepended, source: 'tokenizer.json post_processor prepends it' };
    return { policy, id: null, source: 'the tokenizer adds none (no add_bos_token, no post-processor BOS)' };
  }

  decode(ids: number[]): string {
    return this.inner.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** tokenizer_config.json's `chat_template` (a string, or the one named `default` of a list), where the checkpoint has one. */
  get chatTemplate(): string | undefined {
    const template = this.files.tokenizerConfig.chat_template;
    if (typeof template === 'string') return template;
    if (Array.isArray(template))
      return (template as Array<{ name?: unknown; template?: unknown }>).find((t) => t.name === 'default' && typeof t.template === 'string')
        ?.template as string | undefined;
    return undefined;
  }

  /** A conversation as the chat template renders it, ready for the assistant's turn (the text a chat model continues). */
  renderChat(messages: Array<{ role: string; content: string }>): string {
    const template = this.chatTemplate;
    if (template === undefined) throw new Error(`${this.files.dir}: the tokenizer has no chat template`);
    return this.inner.apply_chat_template(messages, { chat_template: template, tokenize: false, add_generation_prompt: true }) as string;
  }

  /** The exact bytes of a token, where the tokenizer's decoder makes that well defined. */
  bytesOf(id: number): Uint8Array | undefined {
    return this.bytesById[id];
  }
}

function buildByteTable(entries: Array<[string, number]>, decoders: string[], special: Set<number>): Array<Uint8Array | undefined> {
  const table: Array<Uint8Array | undefined> = [];
  const utf8 = new TextEncoder();
  if (decoders.includes('ByteLevel')) {
    const byteOf = gpt2ByteDecoder();
    for (const [piece, id] of entries) {
      if (special.has(id)) {
        table[id] = utf8.encode(piece);
        continue;
      }
      const bytes = [...piece].map((ch) => byteOf.get(ch));
      table[id] = bytes.every((b) => b !== undefined) ? Uint8Array.from(bytes as number[]) : undefined;
    }
    return table;
  }
  if (decoders.includes('ByteFallback')) {
    // SentencePiece-style (Llama, Mistral): `<0xNN>` is a raw byte, `▁` a space. Generated
    // tokens always continue a prompt, so the decoder's strip of a leading space does not apply.
    for (const [piece, id] of entries) {
      const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(piece);
      table[id] = byte ? Uint8Array.of(parseInt(byte[1]!, 16)) : utf8.encode(piece.replace(/\u2581/g, ' '));
    }
    return table;
  }
  return table;
}
