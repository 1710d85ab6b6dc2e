/**
 * A checkpoint directory, whatever holds its weights: the files every one has, read strictly
 * from disk (`config.json`, `tokenizer.json`, `tokenizer_config.json`), and the reader of its
 * weights' format — an ONNX export (`onnx/`: onnx/export-dir.ts) or Hugging Face safetensors
 * (hf/checkpoint.ts). Every missing or malformed file is an `InputError` naming that file.
 *
 * A checkpoint directory is anyone's (a download, a trainer's output): its files are read
 * through safe-tree, so a FIFO or a device in a file's place is refused before it blocks
 * or never ends, each JSON file has a size cap, and the weights' readers check what they
 * hand on (onnxruntime opens an export's graph and external data itself). Links may lead
 * out of the directory (the Hugging Face cache keeps a snapshot's files as links into its
 * blobs/), but only to regular files and directories.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { InputError } from '../errors.ts';
import { readJsonFile } from '../util/safe-tree.ts';
import { CHECKPOINT_DIR, CHECKPOINT_JSON_BYTES } from './checkpoint-limits.ts';
import { DEFAULT_DTYPE, type Dtype } from './onnx/dtype.ts';
import { readHfWeights } from './hf/checkpoint.ts';
import { hasSafetensors } from './hf/safetensors.ts';
import { readOnnxWeights } from './onnx/export-dir.ts';
import type { TransformerModel } from './transformer/model.ts';

export const ModelConfig = z.looseObject({
  vocab_size: z.number().int().positive().optional(),
  max_position_embeddings: z.number().int().positive().optional(),
  n_positions: z.number().int().positive().optional(),
  num_hidden_layers: z.number().int().positive().optional(),
  num_attention_heads: z.number().int().positive().optional(),
  num_key_value_heads: z.number().int().positive().optional(),
  hidden_size: z.number().int().positive().optional(),
  head_dim: z.number().int().positive().optional(),
  /**
   * Our own graphs without a KV cache (n-gram rungs) declare how many trailing tokens the
   * last position's logits depend on, so generation feeds only those instead of the window.
   */
  probe_receptive_field: z.number().int().positive().optional(),
  bos_token_id: z.number().int().nonnegative().nullable().optional(),
  eos_token_id: z
    .union([z.number().int().nonnegative(), z.array(z.number().int().nonnegative())])
    .nullable()
    .optional(),
});
export type ModelConfig = z.infer<typeof ModelConfig>;

const TokenizerJson = z.looseObject({
  model: z.looseObject({ type: z.string().optional(), vocab: z.unknown() }),
  added_tokens: z.array(z.looseObject({ id: z.number(), content: z.string() })).optional(),
  decoder: z.unknown().optional(),
});
export type TokenizerJson = z.infer<typeof TokenizerJson>;

/** Every (piece, id) the tokenizer knows: its model's vocabulary (a map, or Unigram's list) and its added tokens. */
export function tokenEntries(tokenizerJson: TokenizerJson): Array<[string, number]> {
  const vocab = tokenizerJson.model.vocab;
  const entries: Array<[string, number]> = Array.isArray(vocab)
    ? (vocab as Array<[string, number]>).map(([piece], id) => [piece, id])
    : Object.entries((vocab ?? {}) as Record<string, number>);
  for (const t of tokenizerJson.added_tokens ?? []) entries.push([t.content, t.id]);
  return entries;
}

/** One more than the largest id the tokenizer can produce. */
export function vocabSizeOf(entries: ReadonlyArray<[string, number]>): number {
  return entries.reduce((max, [, id]) => Math.max(max, id + 1), 0);
}

/**
 * Where a checkpoint's graph comes from: an ONNX export's file (onnxruntime opens it), or
 * a model probe builds from a Hugging Face directory (hf/checkpoint.ts; its weights read
 * from the safetensors when the graph is built).
 */
export type GraphSource = { kind: 'file' } | { kind: 'built'; model: TransformerModel };

export interface CheckpointFiles {
  dir: string;
  config: ModelConfig;
  tokenizerJson: TokenizerJson;
  tokenizerConfig: Record<string, unknown>;
  /** The graph file, or for a built graph the weights it reads (model.safetensors or the index): what messages name. */
  modelPath: string;
  graph: GraphSource;
  /** Which of the directory's graphs `modelPath` is (dtype.ts). */
  dtype: Dtype;
}

function readJson(file: string, required: boolean): unknown {
  if (!existsSync(file)) {
    if (!required) return undefined;
    throw new InputError(
      { file },
      'file is missing (a checkpoint directory needs config.json, tokenizer.json, and onnx/model.onnx or model.safetensors)',
    );
  }
  return readJsonFile(file, { maxBytes: CHECKPOINT_JSON_BYTES, what: CHECKPOINT_DIR });
}

function validate<T>(schema: z.ZodType<T>, value: unknown, file: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new InputError({ file, field: issue.path.join('.') || undefined }, issue.message);
}

/** The files a tokenizer needs: what `--tokenizer DIR` reads for a served checkpoint (config.json optional). */
export type TokenizerFiles = Pick<CheckpointFiles, 'dir' | 'config' | 'tokenizerJson' | 'tokenizerConfig'>;

export function readTokenizerDir(dirArg: string): TokenizerFiles {
  const dir = resolve(dirArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new InputError(
      { file: dirArg },
      'not a tokenizer directory (expected tokenizer.json, optionally tokenizer_config.json and config.json)',
    );
  const config = validate(ModelConfig, readJson(join(dir, 'config.json'), false) ?? {}, join(dir, 'config.json'));
  const tokenizerJson = validate(TokenizerJson, readJson(join(dir, 'tokenizer.json'), true), join(dir, 'tokenizer.json'));
  const tokenizerConfig = validate(
    z.record(z.string(), z.unknown()),
    readJson(join(dir, 'tokenizer_config.json'), false) ?? {},
    join(dir, 'tokenizer_config.json'),
  );
  return { dir, config, tokenizerJson, tokenizerConfig };
}

/** Whether a directory is a Hugging Face checkpoint probe builds the graph of (safetensors weights and no ONNX export beside them). */
export function isHfDirectory(dir: string): boolean {
  return !existsSync(join(dir, 'onnx')) && hasSafetensors(dir);
}

/**
 * Reads a checkpoint directory: an ONNX export (transformers.js layout), or a Hugging
 * Face directory of safetensors (hf/checkpoint.ts), whose graph probe builds.
 */
export function readCheckpointDir(dirArg: string, dtype: Dtype = DEFAULT_DTYPE): CheckpointFiles {
  const dir = resolve(dirArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new InputError(
      { file: dirArg },
      'not a checkpoint directory (expected config.json, tokenizer.json and onnx/model.onnx or model.safetensors)',
    );
  }
  const config = validate(ModelConfig, readJson(join(dir, 'config.json'), true), join(dir, 'config.json'));
  const tokenizerJson = validate(TokenizerJson, readJson(join(dir, 'tokenizer.json'), true), join(dir, 'tokenizer.json'));
  const tokenizerConfigRaw = readJson(join(dir, 'tokenizer_config.json'), false) ?? {};
  const tokenizerConfig = validate(z.record(z.string(), z.unknown()), tokenizerConfigRaw, join(dir, 'tokenizer_config.json'));
  const files = { dir, config, tokenizerJson, tokenizerConfig };
  return { ...files, ...(isHfDirectory(dir) ? readHfWeights(files, dtype) : readOnnxWeights(dir, dtype)) };
}
