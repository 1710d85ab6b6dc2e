/**
 * Whether a BOS token goes before every context scored and every prompt sampled.
 *
 *   auto    what the checkpoint's own tokenizer does when it encodes with special tokens
 *           (as Hugging Face tokenizers and vLLM do): an explicit boolean `add_bos_token`
 *           in tokenizer_config.json wins (HF's fast Llama tokenizers rebuild their
 *           post-processor from it); otherwise whether tokenizer.json's post-processor
 *           prepends a token (Llama 1/2/3, Mistral, Gemma's TemplateProcessing).
 *   always  the tokenizer's BOS token first, whatever the tokenizer does.
 *   never   no BOS (lm-evaluation-harness's default).
 *
 * BOS is fixed per checkpoint: a context cut on the left to fit the window keeps BOS first
 * and loses the tokens after it, and an empty context is the BOS alone (without BOS, the
 * prefix token: BOS, else EOS, as lm-evaluation-harness conditions an empty context).
 */
export const BOS_POLICIES = ['auto', 'always', 'never'] as const;
export type BosPolicy = (typeof BOS_POLICIES)[number];

/** A policy resolved for one checkpoint: the token put first (null: none) and what decided it. */
export interface BosUse {
  policy: BosPolicy;
  /** The BOS id put before every context and prompt; null when none is. */
  id: number | null;
  /** What decided it, for run.json and reports ("tokenizer_config.json add_bos_token: true"). */
  source: string;
}

/** What run.json records per checkpoint. */
export interface BosRecord {
  policy: BosPolicy;
  used: boolean;
  bos_id: number | null;
  source: string;
}

export function bosRecord(use: BosUse): BosRecord {
  return { policy: use.policy, used: use.id !== null, bos_id: use.id, source: use.source };
}

/** The use a record says (a Slurm job's, read back by the run that submitted it). */
export function bosUseOf(record: BosRecord): BosUse {
  return { policy: record.policy, id: record.used ? record.bos_id : null, source: record.source };
}

/** The tokens a BOS use puts first. */
export function bosHead(use: BosUse): number[] {
  return use.id === null ? [] : [use.id];
}

/** The part of a cache key's checkpoint that a BOS use adds: nothing without BOS, so entries from before the policy existed still answer. */
export function bosKey(use: BosUse): string {
  return use.id === null ? '' : `|bos:${use.id}`;
}

/**
 * The token ids a context is fed as: `head` (the BOS, or nothing) and then the context,
 * cut on the left so that at most `room` tokens remain, the head kept first and the cut
 * made after it. An empty context is the head alone, else `empty` (the prefix token).
 */
export function fitContext(tokens: number[], head: number[], empty: number[], room: number): { ids: number[]; truncated: boolean } {
  if (tokens.length === 0) return { ids: head.length > 0 ? head : empty, truncated: false };
  const keep = Math.max(0, room - head.length);
  const truncated = tokens.length > keep;
  return { ids: [...head, ...(truncated ? tokens.slice(tokens.length - keep) : tokens)], truncated };
}

/**
 * The one token an encoding with special tokens puts before the plain encoding of the same
 * text, if it does (a post-processor that prepends BOS); undefined otherwise.
 */
export function prependedToken(withSpecial: number[], plain: number[]): number | undefined {
  if (withSpecial.length <= plain.length) return undefined;
  return plain.every((t, i) => withSpecial[i + 1] === t) ? withSpecial[0] : undefined;
}

/** Text encoded with and without special tokens to see whether a tokenizer prepends one. */
export const BOS_PROBE_TEXT = 'a';

/** What run.json's config says about the BOS policy: only a policy other than the default, so runs from before the flag still resume. */
export function bosConfig(policy: BosPolicy | undefined): Record<string, unknown> {
  return policy && policy !== 'auto' ? { bos: policy } : {};
}
