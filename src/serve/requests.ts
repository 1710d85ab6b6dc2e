/**
 * What `probe serve` accepts, checked before any model work: every field of an OpenAI (and
 * vLLM) completion or chat request that the server implements, the fields whose only value
 * here is the neutral one (a penalty of 0), and a 400 naming every other field — a field the
 * server ignored would answer a different question than the client asked.
 */
import { z } from 'zod';

/** A request the server refuses: a 400 with this message. */
export class BadRequest extends Error {}

/** Stop strings a request may give: each is searched for after every token, so their number is bounded. */
export const MAX_STOPS = 64;
/** Prompts one completion request may batch. */
export const MAX_PROMPTS = 4096;

// Counted by checkRequest: a union's error would not say why a list was refused.
const stop = z.union([z.string(), z.array(z.string())]).nullish();

/** The sampling fields completions and chat share. */
const sampling = {
  model: z.string().nullish(),
  n: z.number().int().min(1).nullish(),
  seed: z.number().int().nullish(),
  temperature: z.number().min(0).nullish(),
  // 0 keeps only the most likely token, as in process (probe's --top-p 0).
  top_p: z.number().min(0).max(1).nullish(),
  // vLLM's: -1 (or 0) is no top-k.
  top_k: z.number().int().min(-1).nullish(),
  stop,
  stream: z.boolean().nullish(),
  stream_options: z.strictObject({ include_usage: z.boolean().nullish() }).nullish(),
  // Who asked, for the provider's logs: it changes no answer.
  user: z.string().nullish(),
};

/** Fields whose neutral value is all the server implements: the test of that value, and what the 400 says otherwise. */
const NEUTRAL: Record<string, { ok: (value: unknown, body: Record<string, unknown>) => boolean; says: string }> = {
  frequency_penalty: { ok: (v) => v === 0, says: 'only 0 is implemented' },
  presence_penalty: { ok: (v) => v === 0, says: 'only 0 is implemented' },
  repetition_penalty: { ok: (v) => v === 1, says: 'only 1 is implemented' },
  logit_bias: {
    ok: (v) => typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0,
    says: 'only an empty bias is implemented',
  },
  best_of: { ok: (v, body) => v === (body.n ?? 1), says: 'only best_of equal to n is implemented' },
  suffix: { ok: (v) => v === '', says: 'suffixes (insertion) are not implemented' },
};

/** The sampling fields as a request gives them. */
export type SamplingFields = z.infer<z.ZodObject<typeof sampling>>;

export const CompletionRequest = z.object({
  ...sampling,
  // Checked by `promptsOf` before zod sees the request: a token-id prompt can be millions of numbers.
  prompt: z.unknown(),
  echo: z.boolean().nullish(),
  // top_logprobs holds the token and the most likely one: more alternatives are not computed.
  logprobs: z.number().int().min(0).max(1, 'at most 1 is implemented (top_logprobs holds the token and the most likely one)').nullish(),
  max_tokens: z.number().int().min(0).nullish(),
});
export type CompletionRequest = z.infer<typeof CompletionRequest>;

const message = z.strictObject({
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

/** The body as `schema` reads it, or a BadRequest naming the fields not implemented, else the first not valid. */
export function checkRequest<S extends z.ZodObject>(schema: S, body: Record<string, unknown>): z.infer<S> {
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (Object.hasOwn(schema.shape, key) || value === null || value === undefined) continue;
    const neutral = Object.hasOwn(NEUTRAL, key) ? NEUTRAL[key] : undefined;
    if (!neutral) unknown.push(key);
    else if (!neutral.ok(value, body)) throw new BadRequest(`"${key}": ${neutral.says}`);
  }
  if (unknown.length)
    throw new BadRequest(
      `${unknown.map((k) => JSON.stringify(k)).join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not implemented by probe serve; leave ${unknown.length > 1 ? 'them' : 'it'} out`,
    );
  const known = Object.fromEntries(Object.entries(body).filter(([key]) => Object.hasOwn(schema.shape, key)));
  const parsed = schema.safeParse(known);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BadRequest(`"${issue.path.join('.') || 'body'}": ${issue.message}`);
  }
  const request = parsed.data as Record<string, unknown>;
  if (Array.isArray(request.stop) && request.stop.length > MAX_STOPS) throw new BadRequest(`"stop": at most ${MAX_STOPS} stop strings`);
  // What OpenAI refuses too: options of a thing not asked for.
  if (request.stream_options && !request.stream) throw new BadRequest('"stream_options": only with "stream": true');
  if (request.top_logprobs !== undefined && request.top_logprobs !== null && !request.logprobs)
    throw new BadRequest('"top_logprobs": only with "logprobs": true');
  return parsed.data;
}

/**
 * A completion request's prompts, checked by hand (a long token-id list costs zod a
 * record per element): a string, a token-id list, or a non-empty list of either; each list
 * no longer than `maxIds` and every id below `vocab`.
 */
export function promptsOf(prompt: unknown, maxIds: number, vocab: number): Array<string | number[]> {
  const idList = (value: unknown[], where: string): number[] => {
    if (value.length > maxIds) throw new BadRequest(`"${where}": ${value.length} tokens; this model's window is ${maxIds}`);
    for (const id of value)
      if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= vocab)
        throw new BadRequest(`"${where}": ${JSON.stringify(id)?.slice(0, 40)} is not a token id of this model (0 to ${vocab - 1})`);
    return value as number[];
  };
  if (typeof prompt === 'string') return [prompt];
  if (!Array.isArray(prompt) || prompt.length === 0)
    throw new BadRequest('"prompt": must be a string, a list of token ids, a list of strings or a list of token-id lists');
  if (typeof prompt[0] === 'number') return [idList(prompt, 'prompt')];
  if (prompt.length > MAX_PROMPTS) throw new BadRequest(`"prompt": ${prompt.length} prompts; at most ${MAX_PROMPTS} in one request`);
  return prompt.map((p, i) => {
    if (typeof p === 'string') return p;
    if (Array.isArray(p) && p.length > 0) return idList(p, `prompt.${i}`);
    throw new BadRequest(`"prompt.${i}": must be a string or a non-empty list of token ids`);
  });
}

/** `stop` as a list. */
export function stopsOf(value: string | string[] | null | undefined): string[] {
  return value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];
}
