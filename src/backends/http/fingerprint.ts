/**
 * A fingerprint of the weights behind a server, for the result cache's key. A URL and a
 * model name say nothing about the weights: a server restarted on new weights under the
 * same name would otherwise be served the old weights' answers. So once per backend
 * (once per checkpoint per run) the server scores a fixed canary text, and the log-probs
 * it returns identify the weights.
 *
 * Readings of the same weights are not always bit-identical (GPU kernels whose reduction
 * order depends on the batch), so a reading is not hashed as it is: it is compared,
 * token by token within CANARY_TOLERANCE, with the readings this cache has kept for the
 * server, and the first match's hash is the fingerprint; no match adds the reading as a
 * new one. Rounding before hashing would not do: any grid has edges, and a value next to
 * one flips with the smallest noise. Comparing with the reading first stored (not the
 * latest) keeps small differences from adding up over runs.
 *
 * Kinds that cannot score prompts (llama.cpp), or a server that refuses the canary
 * score, are fingerprinted by a greedy sample of the canary's context instead — its text
 * and summed log-prob. A server that reports no log-prob for it cannot be told apart from
 * close weights by text alone: nothing is cached for it, and a warning says so.
 */
import { describeCause, ProbeError } from '../../errors.ts';
import { canonicalJson, sha256, type KeyMaterial } from '../cache-entry.ts';
import { CACHE_VERSION, type ResultCache } from '../cache.ts';
import { isLogprobSum } from '../logprob-range.ts';
import type { HttpBackend } from './backend.ts';
import { RefusedAnswer } from './answer-checks.ts';
import { canScore } from './servers.ts';
import { EndpointFailure } from './transport.ts';

/** Prose, code and digits, so weights that differ anywhere are likely to differ on some token. */
export const CANARY = {
  context: 'probe result-cache canary. The quick brown fox jumps over the lazy dog;',
  continuation: ' def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n# 0 1 1 2 3 5 8 13 21 34',
};

/**
 * Nats per canary token within which two readings count as the same weights. Far above
 * float32 last-bit noise (~1e-6) and the usual run-to-run noise of a server that sees
 * the canary alone; below what a different checkpoint changes on some token of ~90.
 * Noise beyond it only costs a cold cache, never a wrong answer.
 */
export const CANARY_TOLERANCE = 1e-3;

/** Readings kept per server identity; older ones (weights long gone) are dropped. */
const KEPT_READINGS = 32;

const GREEDY_TOKENS = 16;

export interface CanaryReading {
  /** `score`: the canary continuation's token log-probs; `greedy`: a greedy sample of its context, one summed log-prob. */
  method: 'score' | 'greedy';
  tokens: number[];
  logprobs: number[];
  text: string;
}

/**
 * Errors that mean "this server cannot answer the canary this way", as opposed to "the
 * server is down", an interrupt, or an answer no model produces (answer-checks.ts): a server
 * that lies about the canary is refused as it would be on an item, not fingerprinted another way.
 */
function refused(error: unknown): boolean {
  return error instanceof ProbeError && !(error instanceof EndpointFailure) && !(error.cause instanceof RefusedAnswer);
}

/** What a message about a canary answer names as its item. */
const CANARY_LABEL = 'the result-cache canary';

/** The server's canary reading, or why it has none. */
export async function readCanary(backend: HttpBackend): Promise<CanaryReading | string> {
  let scoreProblem = `server kind ${backend.kind} cannot score prompts`;
  if (canScore(backend.kind)) {
    try {
      const result = (
        await backend.score([{ context: CANARY.context, continuations: [CANARY.continuation], label: CANARY_LABEL }])
      )[0]![0]!;
      return { method: 'score', tokens: result.tokens, logprobs: result.tokenLogprobs, text: '' };
    } catch (error) {
      if (!refused(error)) throw error;
      scoreProblem = `the canary score failed: ${describeCause(error)}`;
    }
  }
  try {
    const sample = (
      await backend.sample([
        { prompt: CANARY.context, n: 1, temperature: 0, topP: 1, maxTokens: GREEDY_TOKENS, stop: [], seed: 0, label: CANARY_LABEL },
      ])
    )[0]![0]!;
    if (!Number.isFinite(sample.logprob))
      return `${scoreProblem}, and it reports no log-prob for a greedy sample (its text alone cannot tell close weights apart)`;
    return { method: 'greedy', tokens: sample.tokens, logprobs: [sample.logprob], text: sample.text };
  } catch (error) {
    if (!refused(error)) throw error;
    return `${scoreProblem}, and the greedy canary sample failed: ${describeCause(error)}`;
  }
}

/** Two readings of the same weights: the same method, tokens and text, and every log-prob within the tolerance. */
export function sameWeights(a: CanaryReading, b: CanaryReading): boolean {
  return (
    a.method === b.method &&
    a.text === b.text &&
    a.tokens.length === b.tokens.length &&
    a.tokens.every((t, i) => t === b.tokens[i]) &&
    a.logprobs.length === b.logprobs.length &&
    a.logprobs.every((v, i) => Object.is(v, b.logprobs[i]) || Math.abs(v - b.logprobs[i]!) <= CANARY_TOLERANCE)
  );
}

function isReading(value: unknown): value is CanaryReading {
  const r = value as CanaryReading;
  return (
    typeof r === 'object' &&
    r !== null &&
    (r.method === 'score' || r.method === 'greedy') &&
    typeof r.text === 'string' &&
    Array.isArray(r.tokens) &&
    r.tokens.every((t) => Number.isInteger(t)) &&
    Array.isArray(r.logprobs) &&
    r.logprobs.length > 0 &&
    r.logprobs.every((v) => isLogprobSum(v, GREEDY_TOKENS))
  );
}

function checkReadings(answer: unknown): string | undefined {
  if (!Array.isArray(answer) || answer.length === 0 || answer.length > KEPT_READINGS) return 'not a list of canary readings';
  const bad = answer.findIndex((r) => !isReading(r));
  return bad < 0 ? undefined : `reading ${bad} is not a canary reading`;
}

/**
 * The cache key's checkpoint part for a server: what it says it serves and where, and
 * which weights answered the canary. Undefined (with a warning) when the weights cannot
 * be fingerprinted: then nothing is cached for this server.
 */
export async function serverFingerprint(backend: HttpBackend, cache: ResultCache): Promise<string | undefined> {
  const reading = await readCanary(backend);
  if (typeof reading === 'string') {
    process.stderr.write(
      `probe: warning: the weights behind ${backend.id} cannot be fingerprinted (${reading}); its answers are not cached\n`,
    );
    return undefined;
  }
  const identity = `server:${backend.id}`;
  const key: KeyMaterial = { v: CACHE_VERSION, checkpoint: identity, op: 'canary', request: { canary: CANARY, method: reading.method } };
  const known = (cache.get(key, checkReadings) as CanaryReading[] | undefined) ?? [];
  let match = known.find((k) => sameWeights(k, reading));
  if (!match) {
    match = reading;
    cache.put(key, [...known, reading].slice(-KEPT_READINGS));
  }
  return `${identity}|weights:${sha256(canonicalJson(match)).slice(0, 32)}`;
}
