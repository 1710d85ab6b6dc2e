/**
 * A checkpoint's tokenizer, config and graph must describe one model. A tokenizer.json from
 * another model is the classic mix-up: with more ids than the graph has logits it fails
 * deep inside onnxruntime on the first token past the table; with fewer it scores without
 * complaint and gives a wrong number (a 257-token tokenizer on a 512-logit graph: 8.45 bits
 * per byte instead of 4.9). Checked when the checkpoint is opened, before it does any work.
 *
 * What is legitimate: a graph with more logits than the tokenizer has ids (embeddings
 * padded to a multiple of 64, or one spare row, are common in real exports). What is not:
 * a token id the tokenizer can produce that has no logit, a config.json `vocab_size` other
 * than the graph's logits width, and special-token ids in config.json the tokenizer lacks.
 */
import { join } from 'node:path';
import { InputError } from '../../errors.ts';
import type { ModelConfig } from './checkpoint.ts';

export interface TokenizerIds {
  /** One more than the largest id the tokenizer can produce (vocabulary and added tokens). */
  vocabSize: number;
}

/** config.json's BOS/EOS ids must be tokens of this tokenizer: a model's end-of-text the tokenizer cannot name is another model's. */
export function checkSpecialTokens(dir: string, config: ModelConfig, tokenizer: TokenizerIds): void {
  const configFile = join(dir, 'config.json');
  for (const field of ['bos_token_id', 'eos_token_id'] as const) {
    const value = config[field];
    const ids = Array.isArray(value) ? value : value === null || value === undefined ? [] : [value];
    for (const id of ids) {
      if (id >= tokenizer.vocabSize) {
        throw new InputError(
          { file: configFile, field },
          `is ${id}, but ${join(dir, 'tokenizer.json')} has only ids 0–${tokenizer.vocabSize - 1}: the tokenizer and config.json come from different models`,
        );
      }
    }
  }
}

/** The graph's logits width against config.json's vocab_size and every id the tokenizer can produce. */
export function checkLogitsWidth(dir: string, modelPath: string, config: ModelConfig, tokenizer: TokenizerIds, width: number): void {
  if (config.vocab_size !== undefined && config.vocab_size !== width) {
    throw new InputError(
      { file: join(dir, 'config.json'), field: 'vocab_size' },
      `is ${config.vocab_size}, but the graph ${modelPath} produces ${width} logits per token`,
    );
  }
  if (tokenizer.vocabSize > width) {
    throw new InputError(
      { file: join(dir, 'tokenizer.json'), field: 'model.vocab' },
      `has token ids up to ${tokenizer.vocabSize - 1}, but the graph ${modelPath} produces only ${width} logits per token (ids 0–${width - 1}): the tokenizer belongs to another model`,
    );
  }
}
