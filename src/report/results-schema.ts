/**
 * What a report reads from a run directory's result files, checked before anything is
 * ranked: a hand-edited or foreign results.json whose `bpb` is a string makes every
 * comparison with it NaN, and the sort leaves it wherever it lands (first, when red-teamed).
 * Only the fields the report ranks, tabulates and drills into are checked; anything else is
 * passed through.
 */
import { z } from 'zod';
import type { AsapResult } from '../swe/run.ts';
import type { EnvironmentDeclaration, EnvironmentResult } from '../asap/environment.ts';
import { SWE_ENVIRONMENT } from '../swe/environment.ts';
import { finite, maybeRate, rates } from '../schema/record-fields.ts';
import { InputError } from '../errors.ts';
import type { AptResult } from '../probes/aptbench.ts';
import type { BpbResult } from '../probes/bpb.ts';
import type { McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import type { LadderRow } from '../schema/ladder-row.ts';
import { TREND_PROBES, type TrendPoint } from './trend.ts';

const items = z.array(z.looseObject({}));

const bpb = z.looseObject({
  checkpoint: z.string(),
  bpb: finite.nonnegative(),
  items: z.array(z.looseObject({ id: z.string(), bpb: z.number().nullable() })),
});
const mcq = z.looseObject({ checkpoint: z.string(), acc: maybeRate, acc_norm: maybeRate, acc_pmi: maybeRate, items });
const passk = z.looseObject({
  checkpoint: z.string(),
  n: z.number().int().positive(),
  pass_at: rates,
  items: z.array(z.looseObject({ id: z.string(), n: z.number(), c: z.number() })),
});
const asap = SWE_ENVIRONMENT.resultSchema;
const aptbench = z.looseObject({
  checkpoint: z.string(),
  letter_acc: maybeRate,
  likelihood_acc: maybeRate,
  exact_match: maybeRate,
  rouge_l: maybeRate,
  items,
});
const ladderRow = z.looseObject({
  checkpoint: z.string(),
  bpb: finite.nonnegative(),
  mcq_acc: maybeRate,
  cheap_rank: finite,
  shortlisted: z.boolean(),
  pass_at: rates.nullable(),
});

const trendProbe = z.enum(TREND_PROBES.map((p) => p.key) as [string, ...string[]]);
const trendPoint = z.looseObject({
  checkpoint: z.string(),
  label: z.string(),
  series: z.string(),
  step: z.number().int().nonnegative(),
  values: z.partialRecord(trendProbe, z.object({ value: finite, low: finite.nullable(), high: finite.nullable() })),
  disagreements: z.partialRecord(trendProbe, z.string()),
});

/**
 * A reader per result file: it checks the fields the report uses and passes the rest through
 * as the verb wrote it, so the checked value is given the verb's own result type.
 */
function reader<T>(schema: z.ZodType<unknown>): (value: unknown, file: string) => T {
  return (value, file) => checkResults(schema, value, file) as T;
}

export const readResults = {
  bpb: reader<{ results: BpbResult[] }>(z.looseObject({ results: z.array(bpb) })),
  mcq: reader<{ results: McqResult[] }>(z.looseObject({ results: z.array(mcq) })),
  passk: reader<{ results: PasskResult[] }>(z.looseObject({ results: z.array(passk) })),
  asap: reader<{ results: AsapResult[] }>(z.looseObject({ results: z.array(asap) })),
  aptbench: reader<{ results: AptResult[] }>(z.looseObject({ results: z.array(aptbench) })),
  /** results.json of `probe asap --env NAME` for a registered environment other than SWE: its declared result schema. */
  environment: (env: EnvironmentDeclaration<EnvironmentResult>) =>
    reader<{ results: EnvironmentResult[] }>(z.looseObject({ env: z.literal(env.name), results: z.array(env.resultSchema) })),
  /** results.json of `probe screen` and `probe demo`, and the stage files beside it. */
  ladder: reader<{ results: LadderRow[]; shortlist: string[] }>(
    z.looseObject({ results: z.array(ladderRow), shortlist: z.array(z.string()) }),
  ),
  cheap: reader<{ bpb?: BpbResult[]; mcq?: McqResult[] }>(z.looseObject({ bpb: z.array(bpb).optional(), mcq: z.array(mcq).optional() })),
  passkStage: reader<{ passk?: PasskResult[] }>(z.looseObject({ passk: z.array(passk).optional() })),
  asapStage: reader<{ results?: AsapResult[] }>(z.looseObject({ results: z.array(asap).optional() })),
  /** results.json of `probe watch`: the trend, and each rung's results as its own verb writes them. */
  watch: reader<{ trend: TrendPoint[]; rungs: { bpb: BpbResult[]; mcq: McqResult[]; passk: PasskResult[]; asap: AsapResult[] } }>(
    z.looseObject({
      trend: z.array(trendPoint),
      rungs: z.looseObject({ bpb: z.array(bpb), mcq: z.array(mcq), passk: z.array(passk), asap: z.array(asap) }),
    }),
  ),
  /** results.json of `probe validate`: each rung's results as its own verb writes them (the study's own tables are in the file too). */
  study: reader<{ rungs: { bpb: BpbResult[]; mcq: McqResult[]; passk: PasskResult[]; asap: AsapResult[] } }>(
    z.looseObject({ rungs: z.looseObject({ bpb: z.array(bpb), mcq: z.array(mcq), passk: z.array(passk), asap: z.array(asap) }) }),
  ),
};

/** `value` as read from `file`, or an InputError naming the file and the first bad field. */
function checkResults(schema: z.ZodType<unknown>, value: unknown, file: string): unknown {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.');
  const got = issue.path.reduce<unknown>((v, key) => (v as Record<PropertyKey, unknown> | undefined)?.[key as PropertyKey], value);
  throw new InputError(
    { file, ...(field ? { field } : {}) },
    `${issue.message}${got === undefined ? '' : ` (found ${JSON.stringify(got)?.slice(0, 60)})`}; the report needs the file as the verb wrote it`,
  );
}
