/**
 * config.json's fields as the families read them: which change nothing (NEUTRAL_FIELDS),
 * which every family reads (SHARED_FIELDS), and the reader whose every refusal names the
 * file and the field. A field that is none of these — nor one its family reads — is
 * refused when set: a field probe does not implement never yields a silently different
 * number.
 */
import { InputError } from '../../errors.ts';

export type Config = Record<string, unknown>;

/** Fields every family reads. */
const SHARED_FIELDS = [
  'model_type',
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'max_position_embeddings',
  'tie_word_embeddings',
  'rope_parameters',
  'rope_scaling',
  'rope_theta',
  'partial_rotary_factor',
  'layer_types',
  'hidden_act',
  'rms_norm_eps',
];

/**
 * Fields that do not change a forward pass: ids, dropout (inference runs none),
 * initialisation, the dtype weights were saved in (probe widens them to float32),
 * generation defaults and bookkeeping — transformers 4's and 5's PretrainedConfig fields,
 * the cache class generation uses, remote-code class names (`auto_map`: probe runs no
 * checkpoint code), and probe's own `probe_ladder` block. Window fields are neutral to a
 * family that does not read them (transformers' Llama ignores a `sliding_window`).
 */
const NEUTRAL_FIELDS = new Set([
  '_name_or_path',
  'architectures',
  'transformers_version',
  'dtype',
  'torch_dtype',
  'use_bfloat16',
  'return_dict',
  'output_hidden_states',
  'output_attentions',
  'torchscript',
  'tf_legacy_loss',
  'pruned_heads',
  'chunk_size_feed_forward',
  'is_encoder_decoder',
  'is_decoder',
  'cross_attention_hidden_size',
  'add_cross_attention',
  'tie_encoder_decoder',
  'max_length',
  'min_length',
  'do_sample',
  'early_stopping',
  'num_beams',
  'num_beam_groups',
  'diversity_penalty',
  'temperature',
  'top_k',
  'top_p',
  'typical_p',
  'repetition_penalty',
  'length_penalty',
  'no_repeat_ngram_size',
  'encoder_no_repeat_ngram_size',
  'bad_words_ids',
  'num_return_sequences',
  'output_scores',
  'return_dict_in_generate',
  'forced_bos_token_id',
  'forced_eos_token_id',
  'remove_invalid_values',
  'exponential_decay_length_penalty',
  'suppress_tokens',
  'begin_suppress_tokens',
  'finetuning_task',
  'id2label',
  'label2id',
  'tokenizer_class',
  'prefix',
  'bos_token_id',
  'pad_token_id',
  'eos_token_id',
  'sep_token_id',
  'decoder_start_token_id',
  'task_specific_params',
  'problem_type',
  'use_cache',
  'initializer_range',
  'attention_dropout',
  'hidden_dropout',
  'classifier_dropout',
  'embd_pdrop',
  'resid_pdrop',
  'attn_pdrop',
  'pretraining_tp',
  'probe_ladder',
  '_attn_implementation_autoset',
  'attn_implementation',
  'max_window_layers',
  'use_sliding_window',
  'sliding_window',
  'original_max_position_embeddings',
  'cache_implementation',
  'auto_map',
]);

/** Refuses, naming it, any field of `config` that is set and is neither neutral, shared, nor one `family` reads. */
export function refuseUnknownFields(
  config: Config,
  family: { label: string; reads: string[]; eps: string; activation: string },
  read: FieldReader,
): void {
  for (const [field, value] of Object.entries(config)) {
    if (
      SHARED_FIELDS.includes(field) ||
      NEUTRAL_FIELDS.has(field) ||
      family.reads.includes(field) ||
      family.eps === field ||
      family.activation === field
    )
      continue;
    if (value === null || value === false || value === undefined) continue;
    throw read.refuse(field, `a ${family.label} config field probe does not implement (${JSON.stringify(value).slice(0, 80)})`);
  }
}

/** Reads config.json's fields, each refusal naming the file and the field. */
export class FieldReader {
  constructor(
    private readonly config: Config,
    readonly file: string,
  ) {}

  refuse(field: string, why: string): InputError {
    return new InputError(
      { file: this.file, field },
      `${why}; probe runs this checkpoint's family in process without it — serve it instead (a server URL, or --engine vllm)`,
    );
  }

  /** A positive finite number: every quantity the families read (ε, caps, scalars, sizes) is one, and 0 or less would make NaNs. */
  number(field: string, fallback?: number): number {
    const value = this.config[field] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
      throw new InputError({ file: this.file, field }, `must be a positive number (got ${JSON.stringify(value)})`);
    return value;
  }

  optionalNumber(field: string): number | undefined {
    return this.config[field] === undefined || this.config[field] === null ? undefined : this.number(field);
  }

  integer(field: string, fallback?: number): number {
    const value = this.number(field, fallback);
    if (!Number.isInteger(value) || value <= 0)
      throw new InputError({ file: this.file, field }, `must be a positive integer (got ${value})`);
    return value;
  }
}

export function numberOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}
