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
 *
 * Only items with at least MCQ_MIN_DISTRACTORS distractors are asked: a two- or three-way
 * choice is easier by chance, and mixing them would make `acc` depend on the option counts.
 * Each run reports two diagnostics of the option set itself: how often the shortest option
 * wins (a length contest, not a preference between near misses) and how often an option's
 * text appears verbatim in the context (a copy, not a choice).
 */
import { sampleOne } from '../backends/single.ts';
import type { CompletionBackend, ScoreResult } from '../backends/types.ts';
import { ProbeError } from '../errors.ts';
import { MCQ_MIN_DISTRACTORS, type ProbeItem } from '../schema/probe-item.ts';
import { createRng } from '../util/rng.ts';
import { mapLimit } from '../util/pool.ts';
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

/** Shares over the asked items; null where the style has no such rule. */
export interface McqDiagnostics {
  /** The option picked is the one strictly shorter than all others (UTF-8 bytes), under each rule. */
  shortest_wins: { acc: number | null; acc_norm: number | null; acc_pmi: number | null; letter: number | null };
  /** The gold is that strictly shortest option: what a pick by length alone would score. */
  shortest_is_gold: number;
  /** Some option's text appears verbatim in the context; the gold's; some distractor's. */
  verbatim_in_context: { any: number; gold: number; distractor: number };
}

export interface McqResult {
  checkpoint: string;
  backend: string;
  style: McqStyle;
  acc: number;
  acc_norm: number | null;
  acc_pmi: number | null;
  min_distractors: number;
  /** Items with fewer than `min_distractors` distractors, left out (not scored with fewer options). */
  skipped: string[];
  diagnostics: McqDiagnostics;
  items: McqItem[];
}

/**
 * The one accuracy a ranking of checkpoints reads (the screen's cheap rank, the reports,
 * `probe mcq`'s rank): `acc_norm` where the run scored likelihoods, the letter accuracy
 * under `--style letter` (whose `acc_norm` is null). Why per byte: near-miss options run
 * 0.5–2× the gold's length, and total log-likelihood charges every extra byte, so `acc`
 * rewards whichever option is shorter and orders models by how fast their cost per byte
 * adds up, not by which action they prefer. On `../shared/models`' real Llama rungs (true
 * order s1500 › s250 › s40) `acc` is 20 / 20 / 35% on the demo probes — backwards — and
 * `acc_norm` 30 / 25 / 20%; docs/validation.md gives the agentic ladder.
 */
export function rankingAccuracy(r: { acc: number; acc_norm?: number | null }): number {
  return typeof r.acc_norm === 'number' ? r.acc_norm : r.acc;
}

/** How tables name `rankingAccuracy`. */
export const RANKING_ACCURACY_LABEL = 'acc_norm';

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
    { context: item.context, continuations: options, label: `probe item ${item.id}` },
    { context: '', continuations: options, label: `probe item ${item.id} (its options without the context)` },
  ]);
  if (!conditional || !unconditional) throw new ProbeError(`${backend.id} returned no scores for ${item.id}`);
  const ll = conditional.map(loglik);
  const perByte = conditional.map((r) => loglik(r) / Math.max(1, r.bytes));
  const pmi = ll.map((v, i) => v - loglik(unconditional[i]!));
  const pick = { acc: strictArgmax(ll), acc_norm: strictArgmax(perByte), acc_pmi: strictArgmax(pmi) };
  return {
    id: item.id,
    options: options.length,
    pick,
    correct: pick.acc === 0,
    correct_norm: pick.acc_norm === 0,
    correct_pmi: pick.acc_pmi === 0,
    logliks: ll,
  };
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
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const [sample] = await sampleOne(backend, {
    prompt: letterPrompt(
      item.context,
      order.map((i) => options[i]!),
    ),
    n: 1,
    temperature: 0,
    topP: 1,
    maxTokens: 10,
    stop: [],
    seed,
    label: `probe item ${item.id}`,
  });
  const letter = LETTER_REGEX.exec(sample?.text ?? '')?.[1]?.toUpperCase();
  const position = letter ? letter.charCodeAt(0) - 65 : -1;
  const picked = position >= 0 && position < order.length ? order[position]! : null;
  return {
    id: item.id,
    options: options.length,
    pick: { letter: picked },
    correct: picked === 0,
    correct_norm: null,
    correct_pmi: null,
    generated: sample?.text ?? '',
  };
}

const share = <T>(xs: T[], test: (x: T) => boolean) => (xs.length ? xs.filter(test).length / xs.length : NaN);

/** Index of the option strictly shorter than all others (UTF-8 bytes), or -1 when the shortest length is shared. */
function shortestOption(item: ProbeItem): number {
  const lengths = [item.gold, ...item.distractors].map((o) => Buffer.byteLength(o, 'utf8'));
  const least = Math.min(...lengths);
  return lengths.filter((l) => l === least).length === 1 ? lengths.indexOf(least) : -1;
}

export function mcqDiagnostics(asked: Array<{ item: ProbeItem; scored: McqItem }>, style: McqStyle): McqDiagnostics {
  const wins = (rule: 'acc' | 'acc_norm' | 'acc_pmi' | 'letter') =>
    share(asked, ({ item, scored }) => {
      const pick = (scored.pick as Record<string, number | null>)[rule];
      const shortest = shortestOption(item);
      return shortest >= 0 && pick === shortest;
    });
  const inContext = (item: ProbeItem, option: string) => item.context.includes(option);
  return {
    shortest_wins:
      style === 'likelihood'
        ? { acc: wins('acc'), acc_norm: wins('acc_norm'), acc_pmi: wins('acc_pmi'), letter: null }
        : { acc: null, acc_norm: null, acc_pmi: null, letter: wins('letter') },
    shortest_is_gold: share(asked, ({ item }) => shortestOption(item) === 0),
    verbatim_in_context: {
      any: share(asked, ({ item }) => [item.gold, ...item.distractors].some((o) => inContext(item, o))),
      gold: share(asked, ({ item }) => inContext(item, item.gold)),
      distractor: share(asked, ({ item }) => item.distractors.some((o) => inContext(item, o))),
    },
  };
}

export async function scoreMcq(
  checkpoint: string,
  backend: CompletionBackend,
  items: ProbeItem[],
  style: McqStyle,
  seed: number,
  hooks: ItemHooks<McqItem> = {},
): Promise<McqResult> {
  const skipped = items.filter((item) => item.distractors.length < MCQ_MIN_DISTRACTORS);
  const toAsk = items.filter((item) => item.distractors.length >= MCQ_MIN_DISTRACTORS);
  skipped.forEach((item) => hooks.onItem?.(item.id));
  // Items go to the backend as it can take them (a server: several at once); results keep the items' order.
  const asked = await mapLimit(toAsk, backend.concurrency ?? 1, async (item) => {
    const scored = await memoized(hooks.memo, item.id, () =>
      style === 'likelihood' ? likelihoodItem(backend, item) : letterItem(backend, item, seed),
    );
    hooks.onItem?.(item.id);
    return { item, scored };
  });
  const scored = asked.map((a) => a.scored);
  const rate = (pick: (i: McqItem) => boolean | null) => share(scored, (i) => pick(i) === true);
  return {
    checkpoint,
    backend: backend.id,
    style,
    acc: rate((i) => i.correct),
    acc_norm: style === 'likelihood' ? rate((i) => i.correct_norm) : null,
    acc_pmi: style === 'likelihood' ? rate((i) => i.correct_pmi) : null,
    min_distractors: MCQ_MIN_DISTRACTORS,
    skipped: skipped.map((item) => item.id),
    diagnostics: mcqDiagnostics(asked, style),
    items: scored,
  };
}
