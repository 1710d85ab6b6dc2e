/**
 * What each kind of inference server is asked, and how its answer is read, for prompt
 * log-probabilities (scoring) and for sampling. Pure functions, tested on the servers'
 * documented response shapes (docs/notes/server-shapes.md).
 *
 * Prompt log-probs are where servers silently go wrong, so every answer is checked: one
 * log-prob per prompt token (the first may be null), aligned on our own token ids where
 * the server reports ids; anything else is a `ServerContractError` naming the server kind
 * and what was missing. Every log-prob and token id read is also held to what a model can
 * produce (answer-checks.ts): a value outside it is a `RefusedAnswer`.
 */
import { ProbeError } from '../../errors.ts';
import type { SampleRequest } from '../types.ts';
import { countFrom, logprobFrom, RefusedAnswer, shown, tokenIdFrom } from './answer-checks.ts';

export const SERVER_KINDS = ['openai', 'vllm', 'sglang', 'tgi', 'llamacpp'] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];

/** What each kind is called in the run record. */
export const SERVER_LABEL: Record<ServerKind, string> = {
  openai: 'an OpenAI-compatible server',
  vllm: 'vLLM',
  sglang: 'SGLang',
  tgi: 'TGI',
  llamacpp: "llama.cpp's llama-server",
};

/** How each kind scores a prompt (for `--help` and error messages). */
export const SCORING_METHOD: Record<ServerKind, string> = {
  openai: '/v1/completions with echo, logprobs and max_tokens 1 (the generated token dropped)',
  vllm: "/v1/completions with vLLM's prompt_logprobs",
  sglang: "SGLang's /generate with return_logprob and logprob_start_len 0",
  tgi: "TGI's /generate with decoder_input_details",
  llamacpp: "none: llama.cpp's /v1/completions ignores or rejects echo, so prompt log-probs cannot be had",
};

/** The server's answer breaks the contract scoring relies on (the backend turns it into an InputError naming the server). */
export class ServerContractError extends ProbeError {
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

export interface ScoreCall {
  path: string;
  body: Record<string, unknown>;
}

/** Per prompt position (0 = first token, which has none): the token's log-prob and whether it was the argmax. */
export interface PromptLogprobs {
  logprobs: Array<number | null>;
  greedy: Array<boolean | null>;
  /** TGI, which tokenises the text itself: the token its tokenizer put before the prompt's own (a BOS), if it put one. */
  prepended?: number;
}

export function scoreCall(kind: ServerKind, model: string, ids: number[], text: string): ScoreCall {
  switch (kind) {
    case 'openai':
      return { path: '/v1/completions', body: { model, prompt: ids, echo: true, logprobs: 1, max_tokens: 1, temperature: 0, top_p: 1 } };
    case 'vllm':
      return { path: '/v1/completions', body: { model, prompt: ids, prompt_logprobs: 1, max_tokens: 1, temperature: 0, top_p: 1 } };
    case 'sglang':
      return {
        path: '/generate',
        body: {
          input_ids: ids,
          sampling_params: { max_new_tokens: 0, temperature: 0, top_p: 1 },
          return_logprob: true,
          logprob_start_len: 0,
          top_logprobs_num: 1,
        },
      };
    case 'tgi':
      return { path: '/generate', body: { inputs: text, parameters: { max_new_tokens: 1, details: true, decoder_input_details: true } } };
    case 'llamacpp':
      return refuseScoring(kind);
  }
}

/** Whether a kind can return prompt log-probs at all. */
export function canScore(kind: ServerKind): boolean {
  return kind !== 'llamacpp';
}

/** Kinds that cannot return prompt log-probs are refused before any request is made. */
export function checkCanScore(kind: ServerKind): void {
  if (!canScore(kind)) refuseScoring(kind);
}

function refuseScoring(kind: ServerKind): never {
  throw new ServerContractError(
    `server kind ${kind} cannot score prompts: ${SCORING_METHOD[kind]}; serve the checkpoint with vLLM, SGLang, TGI or probe serve`,
    'echo',
  );
}

/** The request field a server ignored or answered wrongly, per kind (what an error message names). */
const SCORE_FIELD: Record<ServerKind, string> = {
  openai: 'echo',
  vllm: 'prompt_logprobs',
  sglang: 'return_logprob',
  tgi: 'decoder_input_details',
  llamacpp: 'echo',
};

function fail(kind: ServerKind, problem: string): never {
  throw new ServerContractError(`server kind ${kind}: ${problem}`, SCORE_FIELD[kind]);
}

function check(kind: ServerKind, got: number, ids: number[]): void {
  if (got === 0) fail(kind, `returned no prompt log-probs for a ${ids.length}-token prompt`);
  if (got < ids.length) fail(kind, `returned ${got} prompt log-probs for a ${ids.length}-token prompt (truncated)`);
}

/** A prompt position's log-prob: null only at position 0 (nothing comes before it), else a log-probability. */
function promptLogprob(value: unknown, i: number, field: string): number | null {
  if (i === 0 && (value === null || value === undefined)) return null;
  return logprobFrom(value, field, `the log-prob of prompt token ${i}`);
}

/**
 * Reads prompt log-probs out of a score answer, checked against the prompt's token ids;
 * `vocabSize` bounds the token ids the answer names besides the prompt's own.
 */
export function parseScore(kind: ServerKind, answer: unknown, ids: number[], vocabSize?: number): PromptLogprobs {
  const a = answer as Record<string, any>;
  switch (kind) {
    case 'openai': {
      const choice = a?.choices?.[0];
      const lp = choice?.logprobs;
      // llama.cpp answers /v1/completions with chat-shaped logprobs.content for the generated token: echo was what it ignored.
      if (lp && !Array.isArray(lp.token_logprobs) && Array.isArray(lp.content))
        fail(
          kind,
          `the server ignored echo: it returned chat-shaped logprobs.content for ${lp.content.length} generated token(s) and no log-prob for the ${ids.length}-token prompt`,
        );
      if (!lp || !Array.isArray(lp.token_logprobs))
        fail(kind, 'the answer has no choices[0].logprobs.token_logprobs (the server ignored logprobs)');
      // echo ignored: only the generated token comes back.
      if (lp.token_logprobs.length <= 1 && ids.length > 1)
        fail(kind, `the server ignored echo: ${lp.token_logprobs.length} log-prob(s) for a ${ids.length}-token prompt`);
      check(kind, lp.token_logprobs.length, ids);
      if (lp.token_logprobs.length > ids.length + 1)
        fail(
          kind,
          `returned ${lp.token_logprobs.length} log-probs for a ${ids.length}-token prompt and one generated token (the prompt was tokenised differently)`,
        );
      const logprobs = (lp.token_logprobs as unknown[]).slice(0, ids.length).map((v, i) => promptLogprob(v, i, 'logprobs.token_logprobs'));
      const top = (Array.isArray(lp.top_logprobs) ? lp.top_logprobs : []).slice(0, ids.length) as Array<Record<string, unknown> | null>;
      const greedy = logprobs.map((v, i) => {
        const alternatives = top[i];
        if (v === null || !alternatives || typeof alternatives !== 'object') return null;
        const values = Object.entries(alternatives).map(([token, lp]) =>
          logprobFrom(lp, 'logprobs.top_logprobs', `the top log-prob of ${shown(token)} at prompt token ${i}`),
        );
        return v >= Math.max(...values) - 1e-6;
      });
      return { logprobs, greedy };
    }
    case 'vllm': {
      const entries = a?.choices?.[0]?.prompt_logprobs as
        | Array<Record<string, { logprob: number; rank?: number | null }> | null>
        | undefined;
      if (!Array.isArray(entries)) fail(kind, 'the answer has no choices[0].prompt_logprobs (the server ignored prompt_logprobs)');
      check(kind, entries.length, ids);
      if (entries.length > ids.length)
        fail(kind, `returned ${entries.length} prompt log-probs for a ${ids.length}-token prompt (the prompt was tokenised differently)`);
      const logprobs: Array<number | null> = [];
      const greedy: Array<boolean | null> = [];
      entries.forEach((entry, i) => {
        if (entry === null) {
          if (i > 0) fail(kind, `prompt_logprobs[${i}] is null`);
          logprobs.push(null);
          greedy.push(null);
          return;
        }
        const mine = entry[String(ids[i])];
        if (!mine) fail(kind, `prompt_logprobs[${i}] has no entry for token ${ids[i]} (the prompt was tokenised differently)`);
        // Every entry is read, so a value the model cannot produce anywhere in it refuses the answer.
        for (const [token, value] of Object.entries(entry)) {
          tokenIdFrom(/^\d+$/.test(token) ? Number(token) : token, vocabSize, 'prompt_logprobs', `a token of prompt_logprobs[${i}]`);
          logprobFrom(value?.logprob, 'prompt_logprobs', `prompt_logprobs[${i}][${token}].logprob`);
          const rank = value?.rank;
          if (rank !== undefined && rank !== null && !(Number.isInteger(rank) && rank >= 1))
            throw new RefusedAnswer(`prompt_logprobs[${i}][${token}].rank is ${shown(rank)}, not a rank`, 'prompt_logprobs');
        }
        logprobs.push(i === 0 ? promptLogprob(mine.logprob, 0, 'prompt_logprobs') : mine.logprob);
        greedy.push(mine.rank === undefined || mine.rank === null ? null : mine.rank === 1);
      });
      return { logprobs, greedy };
    }
    case 'sglang': {
      const meta = (Array.isArray(a) ? a[0] : a)?.meta_info;
      const input = meta?.input_token_logprobs as Array<[number | null, number, string | null]> | undefined;
      if (!Array.isArray(input)) fail(kind, 'the answer has no meta_info.input_token_logprobs (return_logprob ignored)');
      // Versions differ on whether the first token is included: align on token ids from the end.
      if (input.length < ids.length - 1)
        fail(kind, `returned ${input.length} prompt log-probs for a ${ids.length}-token prompt (truncated)`);
      const offset = ids.length - input.length;
      if (offset < 0 || offset > 1) fail(kind, `returned ${input.length} prompt log-probs for a ${ids.length}-token prompt`);
      const top = (meta.input_top_logprobs ?? []) as Array<Array<[number, number, unknown]> | null>;
      const logprobs: Array<number | null> = offset ? [null] : [];
      const greedy: Array<boolean | null> = offset ? [null] : [];
      input.forEach(([logprob, id], k) => {
        const i = k + offset;
        if (id !== ids[i])
          fail(
            kind,
            `input_token_logprobs[${k}] is for token ${id}, the prompt has ${ids[i]} there (the prompt was tokenised differently)`,
          );
        const value = i === 0 ? null : promptLogprob(logprob, i, 'meta_info.input_token_logprobs');
        logprobs.push(value);
        const alternatives = (Array.isArray(top[k]) ? top[k] : []) as Array<[unknown, unknown, unknown]>;
        const values = alternatives.map(([lp, id], j) => {
          tokenIdFrom(id, vocabSize, 'meta_info.input_top_logprobs', `input_top_logprobs[${k}][${j}]'s token`);
          return logprobFrom(lp, 'meta_info.input_top_logprobs', `input_top_logprobs[${k}][${j}]'s log-prob`);
        });
        const best = values[0];
        greedy.push(value === null || best === undefined ? null : value >= best - 1e-6);
      });
      return { logprobs, greedy };
    }
    case 'tgi': {
      const prefill = a?.details?.prefill as Array<{ id: number; logprob: number | null }> | undefined;
      if (!Array.isArray(prefill) || prefill.length === 0)
        fail(kind, 'the answer has no details.prefill (TGI ≥ 3 needs --enable-prefill-logprobs; decoder_input_details was ignored)');
      check(kind, prefill.length, ids);
      // TGI tokenises the text itself and may put a BOS token first.
      const offset = prefill.length - ids.length;
      if (offset > 1 || ids.some((id, i) => prefill[i + offset]!.id !== id)) {
        fail(
          kind,
          `details.prefill holds tokens [${prefill
            .slice(0, 8)
            .map((p) => p.id)
            .join(
              ', ',
            )}…], the prompt is [${ids.slice(0, 8).join(', ')}…] (TGI tokenises the text itself; give --tokenizer the checkpoint's own tokenizer)`,
        );
      }
      return {
        logprobs: ids.map((_, i) => promptLogprob(i + offset === 0 ? null : prefill[i + offset]!.logprob, i + offset, 'details.prefill')),
        greedy: ids.map(() => null),
        ...(offset === 1 ? { prepended: tokenIdFrom(prefill[0]!.id, vocabSize, 'details.prefill', 'the token TGI put first') } : {}),
      };
    }
    case 'llamacpp':
      return fail(kind, SCORING_METHOD.llamacpp);
  }
}

/** A sample request as sent: `prompt` is the (window-cut) text, `promptIds` its tokens. */
export interface SampleCallOptions extends SampleRequest {
  /** The prompt as token ids: sent where the server takes ids, so it sees exactly our tokens. */
  promptIds: number[];
}

export interface ParsedSample {
  text: string;
  finishReason: 'stop' | 'length' | 'eos' | 'error';
  stop?: string;
  /** Why the server returned no text (finishReason `error`). */
  error?: string;
  /** The sampled token ids, where the server returns them (llama.cpp's `tokens`, SGLang's and TGI's per-token details). */
  ids?: number[];
  /** Token count where the server says it; the caller counts otherwise. */
  tokens: number | null;
  /** Each generated token's log-prob, where the server returns them (llama.cpp's stop the list a token short). */
  tokenLogprobs?: number[];
  logprob: number | null;
}

/**
 * llama.cpp's sampler, set to the distribution probe states: temperature, then top-k (off
 * unless asked), then top-p, then one draw — the in-process order (logits.ts). Its defaults
 * would add top-k 40, min-p 0.05 and top-p 0.95 on their own; naming the chain leaves out
 * every other stage (penalties, DRY, typical-p, XTC, top-n-sigma), and the neutral values
 * are sent too so the request reads as what it does. Recorded with each result (`sampler`).
 */
export function llamacppSampler(o: Pick<SampleRequest, 'temperature' | 'topP' | 'topK'>): Record<string, unknown> {
  return {
    samplers: ['temperature', 'top_k', 'top_p'],
    temperature: o.temperature,
    top_k: o.topK ?? 0,
    top_p: o.topP,
    min_p: 0,
    typical_p: 1,
    repeat_penalty: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    dry_multiplier: 0,
    xtc_probability: 0,
    top_n_sigma: -1,
    mirostat: 0,
  };
}

export function sampleCall(kind: ServerKind, model: string, o: SampleCallOptions): ScoreCall {
  if (kind === 'llamacpp') {
    // The native endpoint, not /v1/completions: it says how each sample ended (stop_type,
    // stopping_word) where the OpenAI one says "stop" for an end of text too; children of
    // one request are seeded seed + i, as vLLM seeds them.
    return {
      path: '/completion',
      body: {
        prompt: o.promptIds,
        n: o.n,
        n_predict: o.maxTokens,
        ...llamacppSampler(o),
        stop: o.stop,
        seed: o.seed,
        n_probs: 1,
        return_tokens: true,
        cache_prompt: true,
      },
    };
  }
  if (kind === 'sglang') {
    return {
      path: '/generate',
      body: {
        input_ids: o.promptIds,
        sampling_params: {
          n: o.n,
          temperature: o.temperature,
          top_p: o.topP,
          ...(o.topK ? { top_k: o.topK } : {}),
          max_new_tokens: o.maxTokens,
          stop: o.stop,
          sampling_seed: o.seed,
        },
        return_logprob: true,
      },
    };
  }
  if (kind === 'tgi') {
    // TGI has no n: the caller sends one request per sample (seeds seed + i).
    return {
      path: '/generate',
      body: {
        inputs: o.prompt,
        parameters: {
          max_new_tokens: o.maxTokens,
          ...(o.temperature > 0 ? { do_sample: true, temperature: o.temperature, ...(o.topP < 1 ? { top_p: o.topP } : {}) } : {}),
          ...(o.topK ? { top_k: o.topK } : {}),
          stop: o.stop,
          seed: o.seed,
          details: true,
        },
      },
    };
  }
  return {
    path: '/v1/completions',
    body: {
      model,
      prompt: o.promptIds,
      n: o.n,
      temperature: o.temperature,
      top_p: o.topP,
      ...(o.topK ? { top_k: o.topK } : {}),
      max_tokens: o.maxTokens,
      stop: o.stop,
      seed: o.seed,
      logprobs: 0,
    },
  };
}

function stopOf(reason: unknown, stops: string[]): string | undefined {
  if (typeof reason === 'string' && stops.includes(reason)) return reason;
  return undefined;
}

/** Per generated token, its log-prob: each a log-probability (null where one was asked for is refused, not read as 0). */
function tokenLogprobs(values: unknown[], field: string): number[] {
  return values.map((v, i) => logprobFrom(v, field, `the log-prob of generated token ${i}`));
}

const sum = (xs: number[]) => xs.reduce((s, v) => s + v, 0);

/** Choices in index order; an index given twice is two answers for one sample. */
function inIndexOrder<T extends { index?: unknown }>(kind: ServerKind, outs: T[], field: string): T[] {
  const sorted = [...outs].sort((x, y) => Number(x?.index ?? 0) - Number(y?.index ?? 0));
  const indexes = sorted.map((o) => o?.index).filter((i) => i !== undefined && i !== null);
  if (new Set(indexes).size !== indexes.length || indexes.some((i) => !Number.isInteger(i) || (i as number) < 0))
    throw new RefusedAnswer(`server kind ${kind}: choice indexes ${shown(indexes)} are not distinct indexes`, field);
  return sorted;
}

/**
 * Samples out of a sampling answer, in choice order. Log-probs and token ids are read
 * through answer-checks.ts (`vocabSize` bounds the ids); how many completions and how long
 * is checked against the request by `checkCompletions`.
 */
export function parseSamples(kind: ServerKind, answer: unknown, stops: string[], vocabSize?: number): ParsedSample[] {
  const a = answer as any;
  if (kind === 'llamacpp') {
    const outs = (Array.isArray(a) ? a : [a]) as any[];
    return inIndexOrder(kind, outs, 'index').map((o) => {
      if (typeof o?.content !== 'string' || typeof o?.stop_type !== 'string')
        fail(kind, "the answer has no content and stop_type (not llama.cpp's /completion)");
      // A stop string is kept only where the server says it matched ("word"); "eos" and "limit" end on their own.
      const stop = o.stop_type === 'word' ? stopOf(o.stopping_word, stops) : undefined;
      if (o.stop_type === 'word' && stop === undefined)
        fail(
          kind,
          `stop_type "word" with stopping_word ${JSON.stringify(o.stopping_word)}, which is not one of the request's stop strings`,
        );
      const ids = Array.isArray(o.tokens)
        ? (o.tokens as unknown[]).map((t, i) => tokenIdFrom(t, vocabSize, 'tokens', `generated token ${i}`))
        : undefined;
      const predicted =
        o.tokens_predicted !== undefined ? countFrom(o.tokens_predicted, 'tokens_predicted', 'tokens_predicted') : (ids?.length ?? null);
      const probs = (Array.isArray(o.completion_probabilities) ? o.completion_probabilities : []) as Array<Record<string, unknown>>;
      // The log-prob of each generated token, where every entry carries one (older servers give probabilities only).
      const withLogprob = probs.length > 0 && probs.every((p) => p !== null && typeof p === 'object' && 'logprob' in p);
      const lps = withLogprob
        ? tokenLogprobs(
            probs.map((p) => p.logprob),
            'completion_probabilities',
          )
        : undefined;
      // Not matched to `tokens` by id: llama.cpp's entries do not line up with them around bytes that are not yet UTF-8.
      return {
        text: o.content,
        finishReason: o.stop_type === 'limit' ? 'length' : stop ? 'stop' : 'eos',
        ...(stop ? { stop } : {}),
        ...(ids ? { ids } : {}),
        tokens: predicted,
        ...(lps ? { tokenLogprobs: lps } : {}),
        logprob: lps ? sum(lps) : null,
      };
    });
  }
  if (kind === 'sglang') {
    const outs = (Array.isArray(a) ? a : [a]) as any[];
    return outs.map((o) => {
      const finish = o?.meta_info?.finish_reason;
      if (typeof o?.text !== 'string' || !finish) fail(kind, 'the answer has no text and meta_info.finish_reason');
      const stop = finish.type === 'stop' ? stopOf(finish.matched, stops) : undefined;
      const out = (Array.isArray(o.meta_info.output_token_logprobs) ? o.meta_info.output_token_logprobs : []) as Array<[unknown, unknown]>;
      const lps = tokenLogprobs(
        out.map(([lp]) => lp),
        'meta_info.output_token_logprobs',
      );
      const ids = out.map(([, id], i) => tokenIdFrom(id, vocabSize, 'meta_info.output_token_logprobs', `generated token ${i}`));
      const claimed = o.meta_info.completion_tokens;
      return {
        text: o.text,
        finishReason: finish.type === 'length' ? 'length' : stop ? 'stop' : 'eos',
        ...(stop ? { stop } : {}),
        ...(out.length ? { ids, tokenLogprobs: lps } : {}),
        tokens: claimed !== undefined ? countFrom(claimed, 'meta_info.completion_tokens', 'completion_tokens') : out.length,
        logprob: out.length ? sum(lps) : null,
      };
    });
  }
  if (kind === 'tgi') {
    const d = a?.details;
    if (typeof a?.generated_text !== 'string' || !d) fail(kind, 'the answer has no generated_text and details');
    // TGI keeps a matched stop sequence at the end of the text.
    const stop = d.finish_reason === 'stop_sequence' ? stops.find((s) => a.generated_text.endsWith(s)) : undefined;
    const text = stop ? a.generated_text.slice(0, -stop.length) : a.generated_text;
    const tokens = (Array.isArray(d.tokens) ? d.tokens : []) as Array<{ id?: unknown; logprob?: unknown }>;
    const lps = tokenLogprobs(
      tokens.map((t) => t?.logprob),
      'details.tokens',
    );
    // Ids where every token entry names one (TGI's do); one named that is no token refuses the answer.
    const named = tokens.length > 0 && tokens.every((t) => t !== null && typeof t === 'object' && 'id' in t);
    const ids = tokens.map((t, i) => (named ? tokenIdFrom(t.id, vocabSize, 'details.tokens', `generated token ${i}`) : -1));
    return [
      {
        text,
        finishReason: d.finish_reason === 'length' ? 'length' : stop ? 'stop' : 'eos',
        ...(stop ? { stop } : {}),
        ...(named ? { ids } : {}),
        ...(tokens.length ? { tokenLogprobs: lps } : {}),
        tokens:
          d.generated_tokens !== undefined ? countFrom(d.generated_tokens, 'details.generated_tokens', 'generated_tokens') : tokens.length,
        logprob: tokens.length ? sum(lps) : null,
      },
    ];
  }
  const choices = a?.choices as any[] | undefined;
  if (!Array.isArray(choices) || choices.length === 0) fail(kind, 'the answer has no choices');
  return inIndexOrder(kind, choices, 'choices').map((c) => {
    if (typeof c?.text !== 'string') fail(kind, 'a choice has no text');
    // vLLM (and probe serve) say which stop string matched in stop_reason. A server that does not
    // says "stop" for an end of text too, so without it no stop string is taken to have matched:
    // appending one the model never wrote could turn half an action into one that parses.
    const stop = c.finish_reason === 'stop' ? stopOf(c.stop_reason, stops) : undefined;
    const lps = Array.isArray(c.logprobs?.token_logprobs) ? tokenLogprobs(c.logprobs.token_logprobs, 'logprobs.token_logprobs') : undefined;
    return {
      text: c.text,
      finishReason: c.finish_reason === 'length' ? 'length' : stop ? 'stop' : 'eos',
      ...(stop ? { stop } : {}),
      tokens: lps ? lps.length : null,
      ...(lps ? { tokenLogprobs: lps } : {}),
      logprob: lps ? sum(lps) : null,
    };
  });
}

/** `/tokenize` per kind: what to send, and the ids in the answer. */
/** `addSpecial`: with the model's special tokens (BOS), as the prefix of an empty context needs; TGI always adds them. */
export function tokenizeCall(kind: ServerKind, model: string, text: string, addSpecial = false): ScoreCall {
  if (kind === 'llamacpp') return { path: '/tokenize', body: { content: text, add_special: addSpecial } };
  if (kind === 'tgi') return { path: '/tokenize', body: { inputs: text } };
  return { path: '/tokenize', body: { model, prompt: text, add_special_tokens: addSpecial } };
}

/** The ids of a `/tokenize` answer, each one of the vocabulary (`vocabSize`, where known). */
export function parseTokenize(kind: ServerKind, answer: unknown, vocabSize?: number): number[] {
  const a = answer as any;
  const ids = kind === 'tgi' && Array.isArray(a) ? a.map((t: { id: number }) => t?.id) : a?.tokens;
  if (!Array.isArray(ids)) fail(kind, '/tokenize returned no list of token ids');
  return (ids as number[]).map((t, i) => tokenIdFrom(t, vocabSize, 'tokens', `/tokenize's token ${i}`));
}
