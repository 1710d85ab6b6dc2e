/**
 * What a run directory's `<probe>/samples.jsonl` lines hold: one finished item of one
 * checkpoint, `{ checkpoint, item, result }`, whose result is the probe's own per-item
 * record. Read back when a run resumes (store/run-dir.ts `memo`), each line is checked
 * against the schema of its probe, found by the probe's name (`SAMPLE_RESULTS`): a name
 * with no schema is a bug, refused before anything is read.
 *
 * Each schema mirrors the interface of the module that writes the record (named on it);
 * test/run-records.test.ts checks, by type, that the two say the same.
 */
import { z } from 'zod';
import { anyNumber, TamperingSchema } from './record-fields.ts';

/** probes/bpb.ts `BpbItem`. */
export const BpbItemSchema = z.object({
  id: z.string(),
  task: z.string(),
  bpb: anyNumber,
  nats: anyNumber,
  bytes: anyNumber,
  tokens: anyNumber,
  truncated: z.boolean(),
  greedy: z.boolean(),
});

/** probes/mcq.ts `McqItem`. */
export const McqItemSchema = z.object({
  id: z.string(),
  options: anyNumber,
  pick: z.union([z.object({ acc: anyNumber, acc_norm: anyNumber, acc_pmi: anyNumber }), z.object({ letter: anyNumber.nullable() })]),
  correct: z.boolean(),
  correct_norm: z.boolean().nullable(),
  correct_pmi: z.boolean().nullable(),
  logliks: z.array(anyNumber).optional(),
  generated: z.string().optional(),
});

/** probes/passk.ts `PasskSample`. */
export const PasskSampleSchema = z.object({
  text: z.string(),
  parsed: z.boolean(),
  resolved: z.boolean(),
  reason: z.string(),
  tampering: z.array(TamperingSchema).optional(),
  notReturned: z.literal(true).optional(),
});

/** probes/passk.ts `PasskItem`. */
export const PasskItemSchema = z.object({
  id: z.string(),
  task: z.string(),
  n: anyNumber,
  c: anyNumber,
  parse_failures: anyNumber,
  not_returned: anyNumber.optional(),
  samples: z.array(PasskSampleSchema),
});

/** probes/aptbench.ts `AptItemResult`. */
export const AptItemResultSchema = z.object({
  uuid: z.string(),
  kind: z.enum(['choice', 'completion', 'free-text']),
  generated: z.string(),
  answer: z.string().nullable(),
  correct: z.boolean(),
  likelihood_answer: z.string().optional(),
  likelihood_correct: z.boolean().optional(),
  rouge_l: anyNumber.optional(),
  truncated: z.boolean(),
});

/** validate/run.ts `RungCost`: what one rung cost on one checkpoint (the study's `costs` samples). */
export const RungCostSchema = z.object({
  rung: z.string(),
  checkpoint: z.string(),
  wall_ms: anyNumber,
  tokens_scored: anyNumber,
  tokens_sampled: anyNumber,
  items: anyNumber,
  items_reused: anyNumber,
});

/** The result each probe's samples.jsonl holds, by the probe's name (the directory of its log). */
export const SAMPLE_RESULTS = {
  bpb: BpbItemSchema,
  'code-bpb': BpbItemSchema,
  mcq: McqItemSchema,
  passk: PasskItemSchema,
  aptbench: AptItemResultSchema,
  /** `probe validate`: each rung's cost per checkpoint, by rung. */
  costs: RungCostSchema,
} as const satisfies Record<string, z.ZodType>;

export type SampleProbe = keyof typeof SAMPLE_RESULTS;

/** store/run-dir.ts `SampleLine`: one line of a samples.jsonl, its result checked by its probe's schema. */
export function sampleLineSchema<T extends z.ZodType>(result: T) {
  return z.object({ checkpoint: z.string(), item: z.string(), result });
}
