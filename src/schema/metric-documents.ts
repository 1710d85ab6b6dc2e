/**
 * A document `probe correlate --results` reads: what `probe bpb|mcq|passk --json` print (and
 * a research or terminal run's results.json), checked for the fields the metrics are made
 * from (stats/metrics.ts `metricsFromDocument`, which is pure and takes the document as
 * given) before any is computed. Only those fields are checked; the rest passes as written.
 * JSON writes NaN and ±Infinity as null, so a number a result may hold non-finite may be null.
 */
import { z } from 'zod';
import { anyNumber } from './record-fields.ts';

const numberOrNull = anyNumber.nullable();

/** A BPB result (probes/bpb.ts `BpbResult`): per-checkpoint BPB is recomputed from its items' nats and bytes. */
const bpbResult = z.object({
  checkpoint: z.string(),
  bpb: numberOrNull,
  items: z.array(z.object({ id: z.string(), nats: numberOrNull, bytes: anyNumber })),
});

/** An MCQ result (probes/mcq.ts `McqResult`): accuracies are recomputed from its items' picks. */
const mcqResult = z.object({
  checkpoint: z.string(),
  acc: numberOrNull,
  style: z.string().optional(),
  items: z.array(z.object({ correct: z.boolean(), correct_norm: z.boolean().nullable(), correct_pmi: z.boolean().nullable() })),
});

/** A pass@k result (prefix pass@K, or episodes of `probe asap --env research|terminal`): pass@k from each item's n and c. */
const passAtResult = z.object({
  checkpoint: z.string(),
  pass_at: z.record(z.string(), numberOrNull),
  env: z.string().optional(),
  items: z.array(z.object({ n: anyNumber, c: anyNumber })),
});

export const MetricDocumentSchema = z.object({
  results: z.union([z.array(bpbResult), z.array(mcqResult), z.array(passAtResult)]),
});
