/**
 * What a server's answer may contain, beyond the shape servers.ts reads: an allow-list of
 * values a model could have produced for the request, not a list of lies seen so far. A
 * server is a black box whose numbers go straight into BPB, MCQ picks and executed actions,
 * so each answer is held to what the request and the checkpoint allow:
 *
 * - every log-prob read is a finite number at most 0 (LOGPROB_TOLERANCE for rounding);
 *   null where one was asked for is refused, not read as 0;
 * - every token id is an integer of the checkpoint's vocabulary (its size from the local
 *   tokenizer, else from what llama.cpp's /v1/models says; without either, any id ≥ 0);
 * - as many completions as were asked for, each within its token budget: the ids the server
 *   returned, its own count, and — with the checkpoint's tokenizer — the fewest tokens that
 *   spell the text (token-spelling.ts), none above `max_tokens`;
 * - a completion's text is what its returned ids read as, and holds no stop string of the
 *   request (the server stops before the first; TGI's kept one is taken off first).
 *
 * An answer that fails is a `RefusedAnswer`: nothing of it is scored or cached; the backend
 * names the server that gave it and the item it was for.
 */
import { ProbeError } from '../../errors.ts';
import { isLogprob, isLogprobSum } from '../logprob-range.ts';
import type { TokenSpelling } from '../token-spelling.ts';
import type { Sample, SampleRequest, ScoreResult } from '../types.ts';
import type { ParsedSample } from './servers.ts';

/** A server answered in the protocol's shape with values no model could produce for the request. */
export class RefusedAnswer extends ProbeError {
  constructor(
    message: string,
    /** The answer's field at fault, as the server names it. */
    readonly field: string,
    /** The replica that answered, once the backend knows it. */
    readonly url?: string,
  ) {
    super(message);
  }

  /** The same refusal, naming the replica that answered. */
  from(url: string): RefusedAnswer {
    return new RefusedAnswer(this.message, this.field, url);
  }
}

/** What the checks know of the checkpoint behind the server. */
export interface Vocabulary {
  /** Token ids run from 0 to size − 1; undefined where nothing says (any id ≥ 0 then passes). */
  size: number | undefined;
  /** The local tokenizer's spelling of texts; undefined without one (the server's counts are then its word). */
  spelling: TokenSpelling | undefined;
}

/** A value as a message shows it: JSON (a number as itself, Infinity included), cut short. */
export function shown(value: unknown): string {
  const text = value === undefined ? 'missing' : typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** `value` as a log-prob read from a server (finite, at most 0), or a refusal naming `where` in `field`. */
export function logprobFrom(value: unknown, field: string, where: string): number {
  if (isLogprob(value, false)) return value;
  const why = typeof value === 'number' && Number.isFinite(value) ? 'above 0' : 'not a finite number';
  throw new RefusedAnswer(`${where} is ${shown(value)}, ${why}: a log-probability is a finite number at most 0`, field);
}

/** Whether `value` is a token id of a vocabulary of `size` ids (any id ≥ 0 where the size is unknown). */
function isTokenId(value: unknown, size: number | undefined): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (size === undefined || (value as number) < size);
}

/** `value` as a token id of the vocabulary, or a refusal naming `where` in `field`. */
export function tokenIdFrom(value: unknown, size: number | undefined, field: string, where: string): number {
  if (isTokenId(value, size)) return value;
  throw new RefusedAnswer(
    `${where} is ${shown(value)}, not a token id of the checkpoint (${size === undefined ? 'an integer ≥ 0' : `0 to ${size - 1}`})`,
    field,
  );
}

/** A count the server reports (tokens it generated), or a refusal. */
export function countFrom(value: unknown, field: string, where: string): number {
  if (Number.isInteger(value) && (value as number) >= 0) return value as number;
  throw new RefusedAnswer(`${where} is ${shown(value)}, not a count of tokens`, field);
}

/**
 * A stop string the text holds where the server should have stopped: the one it says it
 * stopped on, when it says so; else the first of the request's (an empty one stops nothing).
 */
function strayStop(text: string, finishReason: string, stop: string | undefined, stops: readonly string[]): string | undefined {
  if (finishReason === 'stop') return stop !== undefined && stop !== '' && text.includes(stop) ? stop : undefined;
  return stops.find((s) => s !== '' && text.includes(s));
}

/** The budget check shared by fresh answers and cached samples: the fewest tokens spelling `text` against `allowed`. */
function spellingProblem(text: string, allowed: number, spelling: TokenSpelling | undefined, by: string): string | undefined {
  const fewest = spelling?.fewestTokens(text);
  if (fewest === undefined || fewest <= allowed) return undefined;
  return `a completion of ${text.length} characters, which no fewer than ${fewest} tokens of the checkpoint spell, ${by}`;
}

/**
 * The completions of one sampling answer against what was asked (`n`, `maxTokens`, `stop`):
 * throws `RefusedAnswer` at the first value no model could have produced. Log-probs and ids
 * were read through `logprobFrom` and `tokenIdFrom` already (servers.ts).
 */
export function checkCompletions(
  parsed: readonly ParsedSample[],
  asked: Pick<SampleRequest, 'n' | 'maxTokens' | 'stop'>,
  vocabulary: Vocabulary,
  fields: { n: string; budget: string; text: string },
): void {
  if (parsed.length !== asked.n) throw new RefusedAnswer(`${parsed.length} completions for a request of n = ${asked.n}`, fields.n);
  parsed.forEach((p, i) => {
    if (p.finishReason === 'error') return;
    const at = parsed.length > 1 ? `completion ${i}: ` : '';
    const counts = [p.ids?.length, p.tokens ?? undefined, p.tokenLogprobs?.length].filter((c): c is number => c !== undefined);
    const counted = Math.max(0, ...counts);
    if (counted > asked.maxTokens)
      throw new RefusedAnswer(`${at}${counted} tokens generated for max_tokens ${asked.maxTokens}`, fields.budget);
    const spelling = vocabulary.spelling;
    if (p.ids && spelling?.readsAs(p.ids, p.text) === false)
      throw new RefusedAnswer(`${at}the text is not what its ${p.ids.length} token ids read as`, fields.text);
    // What the server says it generated bounds the text, else the budget does.
    const allowed = counts.length ? counted : asked.maxTokens;
    const over = spellingProblem(
      p.text,
      allowed,
      spelling,
      counts.length ? `where the server reports ${allowed} generated (max_tokens ${asked.maxTokens})` : `for max_tokens ${asked.maxTokens}`,
    );
    if (over) throw new RefusedAnswer(`${at}${over}`, fields.budget);
    const stop = strayStop(p.text, p.finishReason, p.stop, asked.stop);
    if (stop !== undefined)
      throw new RefusedAnswer(
        `${at}the text holds the stop string ${shown(stop)}, where the server should have stopped (finish: ${p.finishReason})`,
        fields.text,
      );
  });
}

/**
 * A sample as the backend returned it (and the result cache keeps it), against the request
 * and the checkpoint: the first problem, or undefined. `serverCounted`: its tokens are the
 * server's own (ids it returned, or its count without a local tokenizer), not the text
 * re-encoded, so their number is bounded by the budget too.
 */
export function sampleProblem(
  request: Pick<SampleRequest, 'maxTokens' | 'stop'>,
  sample: Sample,
  vocabulary: Vocabulary,
  serverCounted: boolean,
): string | undefined {
  if (sample.finishReason === 'error') return undefined;
  const countOnly = sample.tokens.length > 0 && sample.tokens.every((t) => t === -1);
  const badId = countOnly ? -1 : sample.tokens.findIndex((t) => !isTokenId(t, vocabulary.size));
  if (badId >= 0) return `token ${badId} is ${shown(sample.tokens[badId])}, not a token id of the checkpoint`;
  if (!Number.isNaN(sample.logprob) && !isLogprobSum(sample.logprob, request.maxTokens, false))
    return `logprob ${shown(sample.logprob)} is not a sum of log-probabilities`;
  if (serverCounted && sample.tokens.length > request.maxTokens)
    return `${sample.tokens.length} tokens for max_tokens ${request.maxTokens}`;
  if (serverCounted && !countOnly && vocabulary.spelling?.readsAs(sample.tokens, sample.text) === false)
    return 'the text is not what its token ids read as';
  const over = spellingProblem(sample.text, request.maxTokens, vocabulary.spelling, `for max_tokens ${request.maxTokens}`);
  if (over) return over;
  const stop = strayStop(sample.text, sample.finishReason, sample.stop, request.stop);
  return stop === undefined ? undefined : `the text holds the stop string ${shown(stop)}`;
}

/** A score result as the backend returned it (and the result cache keeps it): the first problem, or undefined. */
export function scoreProblem(result: ScoreResult, vocabulary: Vocabulary): string | undefined {
  const badLogprob = result.tokenLogprobs.findIndex((v) => !isLogprob(v, false));
  if (badLogprob >= 0) return `tokenLogprobs[${badLogprob}] is ${shown(result.tokenLogprobs[badLogprob])}, not a log-probability`;
  const badId = result.tokens.findIndex((t) => !isTokenId(t, vocabulary.size));
  return badId >= 0 ? `tokens[${badId}] is ${shown(result.tokens[badId])}, not a token id of the checkpoint` : undefined;
}
