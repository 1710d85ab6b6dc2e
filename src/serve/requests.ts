/**
 * What `probe serve` accepts, checked before any model work: every field of an OpenAI (and
 * vLLM) completion or chat request that the server implements, the fields whose only value
 * here is the neutral one (a penalty of 0), and a 400 naming any other field — a field the
 * server ignored would answer a different question than the client asked.
 */
import { z } from 'zod';

/** A request the server refuses: a 400 with this message. */
export class BadRequest extends Error {}

const tokenIds = z.array(z.number().int().nonnegative());
const stop = z.union([z.string(), z.array(z.string())]).nullish();
const streamOptions = z.strictObject({ include_usage: z.boolean().nullish() }).nullish();

/** The sampling fields completions and chat share. */
const sampling = {
  model: z.string().nullish(),
  n: z.number().int().min(1).max(128).nullish(),
  seed: z.number().int().nullish(),
  temperature: z.number().min(0).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  // vLLM's: -1 (or 0) is no top-k.
  top_k: z.number().int().min(-1).nullish(),
  stop,
  stream: z.boolean().nullish(),
  stream_options: streamOptions,
  // Who asked, for the provider's logs: it changes no answer.
  user: z.string().nullish(),
};

/** Fields whose neutral value is all the server implements: the value itself, or a test. */
const NEUTRAL: Record<string, { ok: (value: unknown, body: Record<string, unknown>) => boolean; says: string }> = {
  frequency_penalty: { ok: (v) => v === 0, says: 'only 0 is implemented' },
  presence_penalty: { ok: (v) => v === 0, says: 'only 0 is implemented' },
  repetition_penalty: { ok: (v) => v === 1, says: 'only 1 is implemented' },
  logit_bias: { ok: (v) => typeof v === 'object' && Object.keys(v as object).length === 0, says: 'only an empty bias is implemented' },
  best_of: { ok: (v, body) => v === (body.n ?? 1), says: 'only best_of equal to n is implemented' },
  suffix: { ok: (v) => v === '', says: 'suffixes (insertion) are not implemented' },
};

export const CompletionRequest = z.object({
  ...sampling,
  prompt: z.union([z.string(), z.array(z.string()).min(1), tokenIds.min(1), z.array(tokenIds.min(1)).min(1)], {
    error: 'must be a string, a list of token ids, a list of strings or a list of token-id lists',
  }),
  echo: z.boolean().nullish(),
  // top_logprobs holds the token and the most likely one: more alternatives are not computed.
  logprobs: z.number().int().min(0).max(1, 'at most 1 is implemented (top_logprobs holds the token and the most likely one)').nullish(),
  max_tokens: z.number().int().min(0).nullish(),
});
export type CompletionRequest = z.infer<typeof CompletionRequest>;

const message = z.looseObject({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.union([z.string(), z.array(z.strictObject({ type: z.literal('text'), text: z.string() }))]),
});

export const ChatRequest = z.object({
  ...sampling,
  messages: z.array(message).min(1),
  max_tokens: z.number().int().min(1).nullish(),
  max_completion_tokens: z.number().int().min(1).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(1, 'at most 1 is implemented (the token and the most likely one)').nullish(),
});
export type ChatRequest = z.infer<typeof ChatRequest>;

/** The body as `schema` reads it, or a BadRequest naming the first field that is not implemented or not valid. */
export function checkRequest<S extends z.ZodObject>(schema: S, body: unknown): z.infer<S> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequest('the request body is not a JSON object');
  const fields = body as Record<string, unknown>;
  for (const [key, value] of Object.entries(fields)) {
    if (key in schema.shape || value === null || value === undefined) continue;
    const neutral = NEUTRAL[key];
    if (!neutral) throw new BadRequest(`"${key}" is not implemented by probe serve; leave it out`);
    if (!neutral.ok(value, fields)) throw new BadRequest(`"${key}": ${neutral.says}`);
  }
  const known = Object.fromEntries(Object.entries(fields).filter(([key]) => key in schema.shape));
  const parsed = schema.safeParse(known);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  throw new BadRequest(`"${issue.path.join('.') || 'body'}": ${issue.message}`);
}

/** `stop` as a list. */
export function stopsOf(value: string | string[] | null | undefined): string[] {
  return value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];
}
