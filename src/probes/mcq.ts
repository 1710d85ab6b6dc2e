/**
 * Patch MCQ: does the checkpoint prefer the gold decisive action over near-miss actions
 * that the same verifier rejects?
 *
 * `likelihood` style (one pass over the context per item, shared by all options):
 * - acc: the gold's log-likelihood beats every distractor's (a tie counts as wrong);
 * - acc_norm: the same per UTF-8 byte of each option;
 * - acc_pmi: log p(option | context) − log p(option | empty context), as
 *   lm-evaluation-harness's acc_mutual_info.
 * `letter` style (APTBench): options listed (A), (B), … in an order shuffled by seed, the
 * model generates greedily and the first letter matching `\b([A-Za-z])[\)\n]` is its answer.
 */
import { sampleOne } from '../backends/single.ts';
import type { CompletionBackend, ScoreResult } from '../backends/types.ts';
import { ProbeError } from '../errors.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { createRng } from '../util/rng.ts';
import { memoized, type ItemHooks } from './memo.ts';

export type McqStyle = 'likelihood' | 'letter';

export interface McqItem {
  id: string;
  options: number;
  /** Index of the option the model picked (0 is the gold) under each rule. */
  pick: { acc: number; acc_norm: number; acc_pmi: number } | { letter: number | null };
  correct: boolean;
  correct_norm: boolean | null;
  correct_pmi: boolean | null;
  logliks?: number[];
  generated?: string;
}

export interface McqResult {
  checkpoint: string;
  backend: string;
  style: McqStyle;
  acc: number;
  acc_norm: number | null;
  acc_pmi: number | null;
  /** Items without distractors cannot be asked and are left out. */
  skipped: string[];
  items: McqItem[];
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const loglik = (r: ScoreResult) => sum(r.tokenLogprobs);

/** Index of the strict maximum, or -1 when the best value is shared. */
function strictArgmax(values: number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return values.filter((v) => v === values[best]).length > 1 ? -1 : best;
}

async function likelihoodItem(backend: CompletionBackend, item: ProbeItem): Promise<McqItem> {
  const options = [item.gold, ...item.distractors];
  const [conditional, unconditional] = await backend.score([
    { context: item.context, continuations: options },
    { context: '', continuations: options },
  ]);
  if (!conditional || !unconditional) throw new ProbeError(`${backend.id} returned no scores for ${item.id}`);
  const ll = conditional.map(loglik);
  const perByte = conditional.map((r) => loglik(r) / Math.max(1, r.bytes));
  const pmi = ll.map((v, i) => v - loglik(unconditional[i]!));
  const pick = { acc: strictArgmax(ll), acc_norm: strictArgmax(perByte), acc_pmi: strictArgmax(pmi) };
  return { id: item.id, options: options.length, pick, correct: pick.acc === 0, correct_norm: pick.acc_norm === 0, correct_pmi: pick.acc_pmi === 0, logliks: ll };
}

export const LETTER_REGEX = /\b([A-Za-z])[)\n]/;

export function letterPrompt(context: string, options: string[]): string {
  const listed = options.map((o, i) => `(${String.fromCharCode(65 + i)}) ${o}`).join('\n\n');
  return `${context.replace(/\s+$/u, '')}\n\nQuestion: which of these is the next action?\n\n${listed}\n\nAnswer:`;
}

async function letterItem(backend: CompletionBackend, item: ProbeItem, seed: number): Promise<McqItem> {
  const options = [item.gold, ...item.distractors];
  const rng = createRng('mcq-letter', seed, item.id);
  const order = options.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) { const j = rng.int(i + 1); [order[i], order[j]] = [order[j]!, order[i]!]; }
  const [sample] = await sampleOne(backend, {
    prompt: letterPrompt(item.context, order.map((i) => options[i]!)), n: 1, temperature: 0, topP: 1, maxTokens: 10, stop: [], seed,
  });
  const letter = LETTER_REGEX.exec(sample?.text ?? '')?.[1]?.toUpperCase();
  const position = letter ? letter.charCodeAt(0) - 65 : -1;
  const picked = position >= 0 && position < order.length ? order[position]! : null;
  return { id: item.id, options: options.length, pick: { letter: picked }, correct: picked === 0, correct_norm: null, correct_pmi: null, generated: sample?.text ?? '' };
}

export async function scoreMcq(checkpoint: string, backend: CompletionBackend, items: ProbeItem[], style: McqStyle, seed: number, hooks: ItemHooks<McqItem> = {}): Promise<McqResult> {
  const asked: McqItem[] = [];
  const skipped: string[] = [];
  for (const item of items) {
    if (item.distractors.length === 0) skipped.push(item.id);
    else asked.push(await memoized(hooks.memo, item.id, () => (style === 'likelihood' ? likelihoodItem(backend, item) : letterItem(backend, item, seed))));
    hooks.onItem?.();
  }
  const rate = (pick: (i: McqItem) => boolean | null) => (asked.length ? asked.filter((i) => pick(i) === true).length / asked.length : NaN);
  return {
    checkpoint, backend: backend.id, style,
    acc: rate((i) => i.correct),
    acc_norm: style === 'likelihood' ? rate((i) => i.correct_norm) : null,
    acc_pmi: style === 'likelihood' ? rate((i) => i.correct_pmi) : null,
    skipped, items: asked,
  };
}
