/**
 * A checkpoint's tokenizer, config and graph must describe one model. A tokenizer.json from
 * another model is the classic mix-up: with more ids than the graph has logits it fails
 * deep inside onnxruntime on the first token past the table; with fewer it scores without
 * complaint and gives a wrong number (a 257-token tokenizer on a 512-logit graph: 8.45 bits
 * per byte instead of 4.9; a 512-token one on an 8,192-logit graph: 7.38). Checked when the
 * checkpoint is opened, before it does any work (a `--tokenizer` directory of a served model,
 * against its config.json, when the checkpoint is resolved).
 *
 * What is legitimate: a graph with a few more logits than the tokenizer has ids — exports
 * pad the embedding to a multiple of 64 (or of a larger power of two), which leaves under
 * 64 rows unused, or under 1/16 of the table for a large vocabulary (Qwen2: 271 of 151,936;
 * Phi-2: 905 of 51,200). Every checkpoint this project ships or reads has none. What is not:
 * more unused rows than that, a token id the tokenizer can produce that has no logit, a
 * config.json `vocab_size` other than the graph's logits width, and special-token ids in
 * config.json that are not the tokenizer's own special tokens.
 */
import { join } from 'node:path';
import { InputError } from '../../errors.ts';
import { type ModelConfig, type TokenizerFiles, tokenEntries, vocabSizeOf } from '../checkpoint-dir.ts';

export interface TokenizerIds {
  /** One more than the largest id the tokenizer can produce (vocabulary and added tokens). */
  vocabSize: number;
  /**
   * Its special tokens by id: the added tokens of tokenizer.json and the bos/eos tokens of
   * tokenizer_config.json. Empty when it names none (then nothing is checked against them).
   */
  specials?: ReadonlyMap<number, string>;
}

/** What the tokenizer files say about ids, without building the tokenizer. */
export function tokenizerIdsOf(files: Pick<TokenizerFiles, 'tokenizerJson' | 'tokenizerConfig'>): TokenizerIds {
  const entries = tokenEntries(files.tokenizerJson);
  const specials = new Map<number, string>((files.tokenizerJson.added_tokens ?? []).map((t) => [t.id, t.content]));
  const idOf = new Map(entries);
  for (const key of ['bos_token', 'eos_token']) {
    const value = files.tokenizerConfig[key];
    // A token is written as its text, or as an AddedToken object holding it.
    const content = typeof value === 'string' ? value : (value as { content?: unknown } | null)?.content;
    const id = typeof content === 'string' ? idOf.get(content) : undefined;
    if (id !== undefined) specials.set(id, content as string);
  }
  return { vocabSize: vocabSizeOf(entries), specials };
}

/** Whether `width` rows for a tokenizer of `tokens` ids is that tokenizer's table, padded as exports pad it. */
export function isPaddedTable(tokens: number, width: number): boolean {
  if (tokens === width) return true;
  return tokens < width && width % 64 === 0 && width - tokens < Math.max(64, width / 16);
}

function specialIds(config: ModelConfig, field: 'bos_token_id' | 'eos_token_id'): number[] {
  const value = config[field];
  return Array.isArray(value) ? value : value === null || value === undefined ? [] : [value];
}

/** config.json's BOS/EOS ids must be tokens of this tokenizer: a model's end-of-text the tokenizer cannot name is another model's. */
export function checkSpecialTokens(dir: string, config: ModelConfig, tokenizer: TokenizerIds): void {
  for (const field of ['bos_token_id', 'eos_token_id'] as const) {
    for (const id of specialIds(config, field)) {
      if (id >= tokenizer.vocabSize) {
        throw new InputError(
          { file: join(dir, 'config.json'), field },
          `is ${id}, but ${join(dir, 'tokenizer.json')} has only ids 0–${tokenizer.vocabSize - 1}: the tokenizer and config.json come from different models`,
        );
      }
    }
  }
}

/** …and special tokens of it, not ordinary pieces (checked after the sizes, whose mismatch says more). */
export function checkSpecialsAreSpecial(dir: string, config: ModelConfig, tokenizer: TokenizerIds): void {
  const specials = tokenizer.specials ?? new Map<number, string>();
  if (specials.size === 0) return;
  for (const field of ['bos_token_id', 'eos_token_id'] as const) {
    for (const id of specialIds(config, field)) {
      if (specials.has(id)) continue;
      const named = [...specials].map(([sid, content]) => `${sid} ${JSON.stringify(content)}`).join(', ');
      throw new InputError(
        { file: join(dir, 'config.json'), field },
        `is ${id}, but id ${id} is not a special token of ${join(dir, 'tokenizer.json')} (its special tokens: ${named}): the tokenizer and config.json come from different models`,
      );
    }
  }
}

/** The tokenizer's ids against a table of `width` rows, described by `what` (config.json's vocab_size, or the graph's logits). */
function checkTableSize(dir: string, tokenizer: TokenizerIds, width: number, what: string): void {
  if (tokenizer.vocabSize > width) {
    throw new InputError(
      { file: join(dir, 'tokenizer.json'), field: 'model.vocab' },
      `has token ids up to ${tokenizer.vocabSize - 1}, but ${what} (ids 0–${width - 1}): the tokenizer belongs to another model`,
    );
  }
  if (!isPaddedTable(tokenizer.vocabSize, width)) {
    throw new InputError(
      { file: join(dir, 'tokenizer.json'), field: 'model.vocab' },
      `has ${tokenizer.vocabSize} token ids (0–${tokenizer.vocabSize - 1}), but ${what}: ${width - tokenizer.vocabSize} rows no token reaches are more than an export pads (to a multiple of 64, under 64 rows or 1/16 of the table), so the tokenizer belongs to another model`,
    );
  }
}

/** The tokenizer against config.json alone (no graph loaded): its special tokens, and its size against `vocab_size`. */
export function checkTokenizerAgainstConfig(dir: string, config: ModelConfig, tokenizer: TokenizerIds): void {
  checkSpecialTokens(dir, config, tokenizer);
  if (config.vocab_size !== undefined)
    checkTableSize(dir, tokenizer, config.vocab_size, `${join(dir, 'config.json')} has vocab_size ${config.vocab_size}`);
  checkSpecialsAreSpecial(dir, config, tokenizer);
}

/** The graph's logits width against config.json's vocab_size and every id the tokenizer can produce. */
export function checkLogitsWidth(dir: string, modelPath: string, config: ModelConfig, tokenizer: TokenizerIds, width: number): void {
  if (config.vocab_size !== undefined && config.vocab_size !== width) {
    throw new InputError(
      { file: join(dir, 'config.json'), field: 'vocab_size' },
      `is ${config.vocab_size}, but the graph ${modelPath} produces ${width} logits per token`,
    );
  }
  checkTableSize(
    dir,
    tokenizer,
    width,
    tokenizer.vocabSize > width
      ? `the graph ${modelPath} produces only ${width} logits per token`
      : `the graph ${modelPath} produces ${width} logits per token${config.vocab_size === undefined ? '' : ` (and ${join(dir, 'config.json')} has vocab_size ${config.vocab_size})`}`,
  );
}
