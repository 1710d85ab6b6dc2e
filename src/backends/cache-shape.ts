/**
 * What a cached answer must look like for the request it answers. The checksum of an
 * entry only says the file is as it was written; these checks say the answer can be a
 * backend's answer to this request at all: one result per continuation (one sample per
 * requested sample), token and log-prob counts that agree, every log-prob a number at most
 * 0 (logprob-range.ts; a tagged -Infinity is one; NaN, +Infinity, a positive number, null
 * and strings are not). Each returns the
 * first problem in words, or undefined. Fresh answers are checked too before they are
 * stored, so a backend whose answers fail here is computed every time rather than
 * warned about on every run.
 */
import { isLogprob, isLogprobSum } from './logprob-range.ts';
import type { SampleRequest, ScoreRequest } from './types.ts';

type Problem = string | undefined;

const utf8 = new TextEncoder();

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value as an error message shows it: JSON, cut short (a damaged entry can be large). */
function describe(value: unknown): string {
  const text = value === undefined ? 'missing' : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function checkLogprobs(field: string, value: unknown): Problem {
  if (!Array.isArray(value)) return `${field} is ${describe(value)}, not a list`;
  const bad = value.findIndex((v) => !isLogprob(v));
  return bad < 0 ? undefined : `${field}[${bad}] is ${describe(value[bad])}, not a log-prob`;
}

function checkTokens(field: string, value: unknown, min: number): Problem {
  if (!Array.isArray(value)) return `${field} is ${describe(value)}, not a list`;
  const bad = value.findIndex((t) => !Number.isInteger(t) || (t as number) < min);
  return bad < 0 ? undefined : `${field}[${bad}] is ${describe(value[bad])}, not a token id`;
}

function checkBoolean(field: string, value: unknown): Problem {
  return typeof value === 'boolean' ? undefined : `${field} is ${describe(value)}, not true or false`;
}

/** The UTF-8 bytes a backend scores for a continuation: the context's trailing whitespace moves into it (boundary rule). */
function scoredBytes(context: string, continuation: string): number {
  const moved = context.slice(context.replace(/\s+$/u, '').length);
  return utf8.encode(moved + continuation).length;
}

function checkScoreResult(result: unknown, bytes: number): Problem {
  if (!isRecord(result)) return `${describe(result)} is not a result`;
  const problem =
    checkLogprobs('tokenLogprobs', result.tokenLogprobs) ??
    checkTokens('tokens', result.tokens, 0) ??
    checkBoolean('greedy', result.greedy) ??
    checkBoolean('truncated', result.truncated);
  if (problem) return problem;
  const tokens = result.tokens as number[];
  const logprobs = result.tokenLogprobs as number[];
  if (tokens.length !== logprobs.length) return `${tokens.length} tokens but ${logprobs.length} log-probs`;
  if (result.bytes !== bytes) return `bytes is ${describe(result.bytes)}, the scored continuation has ${bytes}`;
  if (bytes > 0 && tokens.length === 0) return `no tokens for a continuation of ${bytes} bytes`;
  if (result.argmax !== undefined) {
    if (!Array.isArray(result.argmax) || result.argmax.length !== tokens.length) return `argmax is not a list of ${tokens.length} entries`;
    const bad = result.argmax.findIndex(
      (a) => !isRecord(a) || !Number.isInteger(a.token) || (a.token as number) < 0 || !isLogprob(a.logprob),
    );
    if (bad >= 0) return `argmax[${bad}] is ${describe(result.argmax[bad])}`;
  }
  return undefined;
}

export function checkScoreAnswer(request: ScoreRequest, answer: unknown): Problem {
  if (!Array.isArray(answer)) return `${describe(answer)} is not a list of results`;
  if (answer.length !== request.continuations.length) return `${answer.length} results for ${request.continuations.length} continuations`;
  for (const [i, result] of answer.entries()) {
    const problem = checkScoreResult(result, scoredBytes(request.context, request.continuations[i]!));
    if (problem) return `result ${i}: ${problem}`;
  }
  return undefined;
}

const FINISH_REASONS = new Set(['stop', 'length', 'eos', 'error']);

function checkSample(sample: unknown, request: SampleRequest): Problem {
  if (!isRecord(sample)) return `${describe(sample)} is not a sample`;
  if (typeof sample.text !== 'string') return `text is ${describe(sample.text)}, not a string`;
  // -1 stands for a token a server counted but did not name (no local tokenizer).
  const problem = checkTokens('tokens', sample.tokens, -1) ?? checkBoolean('truncated', sample.truncated);
  if (problem) return problem;
  // NaN is how a server that reported no log-prob is recorded; anything else must be a sum of log-probs.
  if (typeof sample.logprob !== 'number' || (!Number.isNaN(sample.logprob) && !isLogprobSum(sample.logprob, request.maxTokens)))
    return `logprob is ${describe(sample.logprob)}`;
  if (!FINISH_REASONS.has(sample.finishReason as string)) return `finishReason is ${describe(sample.finishReason)}`;
  if ((sample.finishReason === 'stop') !== (sample.stop !== undefined))
    return `finishReason ${describe(sample.finishReason)} with stop ${describe(sample.stop)}`;
  if ((sample.finishReason === 'error') !== (typeof sample.error === 'string'))
    return `finishReason ${describe(sample.finishReason)} with error ${describe(sample.error)}`;
  if (sample.stop !== undefined && !request.stop.includes(sample.stop as string))
    return `stop ${describe(sample.stop)} is not one of the request's stop strings`;
  if (sample.tokenLogprobs !== undefined) {
    const bad = checkLogprobs('tokenLogprobs', sample.tokenLogprobs);
    if (bad) return bad;
    const logprobs = sample.tokenLogprobs as number[];
    const tokens = sample.tokens as number[];
    if (logprobs.length !== tokens.length) return `${tokens.length} tokens but ${logprobs.length} log-probs`;
    // The backend sums the same values in the same order: the total matches exactly.
    const sum = logprobs.reduce((s, v) => s + v, 0);
    if (!Object.is(sum, sample.logprob) && !(Math.abs(sum - sample.logprob) <= 1e-9 * Math.max(1, Math.abs(sum)))) {
      return `logprob ${sample.logprob} is not the sum of its token log-probs (${sum})`;
    }
  }
  return undefined;
}

export function checkSampleAnswer(request: SampleRequest, answer: unknown): Problem {
  if (!Array.isArray(answer)) return `${describe(answer)} is not a list of samples`;
  if (answer.length !== request.n) return `${answer.length} samples for n = ${request.n}`;
  for (const [i, sample] of answer.entries()) {
    const problem = checkSample(sample, request);
    if (problem) return `sample ${i}: ${problem}`;
  }
  return undefined;
}
