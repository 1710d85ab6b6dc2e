/**
 * `/v1/completions` as the OpenAI API and vLLM answer it: one prompt or a batch (a string,
 * token ids, or a list of either), choices indexed prompt by prompt and then by sample;
 * `echo` with the prompt's log-probs (the first null); `logprobs` 0 or 1 (`top_logprobs`:
 * the token, and with 1 the most likely one); and `stream`, one event per token group as
 * the model draws it, text held back only while it could be the start of a stop string.
 */
import type { Sample, ScoreResult } from '../backends/types.ts';
import type { EventStream } from './event-stream.ts';
import {
  answerPrompts,
  checkPrompts,
  finishReason,
  type Generation,
  type PromptAnswer,
  scoresOnly,
  sendableLength,
  type ServedModel,
} from './generate.ts';
import { BadRequest, type CompletionRequest, stopsOf } from './requests.ts';

interface Logprobs {
  tokens: string[];
  token_logprobs: Array<number | null>;
  top_logprobs: Array<Record<string, number> | null>;
  text_offset: number[];
}

/** A checked request, ready to answer: its prompts as token ids and how they are continued. */
export interface CompletionPlan {
  prompts: number[][];
  generation: Generation;
  /** `logprobs`: undefined (none), 0 (the token) or 1 (and the most likely one). */
  logprobs: number | undefined;
  includeUsage: boolean;
}

export function planCompletion(model: ServedModel, body: CompletionRequest): CompletionPlan {
  const prompt = body.prompt;
  const prompts = (
    typeof prompt === 'string' || typeof prompt[0] === 'number' ? [prompt as string | number[]] : (prompt as Array<string | number[]>)
  ).map((p) => model.idsOf(p));
  const echo = Boolean(body.echo);
  const maxTokens = body.max_tokens ?? 16;
  if (maxTokens === 0 && !echo) throw new BadRequest('"max_tokens" must be at least 1 (0 only with echo)');
  const logprobs = body.logprobs ?? undefined;
  const generation: Generation = {
    n: body.n ?? 1,
    maxTokens,
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k && body.top_k > 0 ? body.top_k : undefined,
    stop: stopsOf(body.stop),
    seed: body.seed ?? 0,
    echo,
    argmax: logprobs !== undefined && logprobs >= 1,
  };
  checkPrompts(model, prompts, generation);
  return { prompts, generation, logprobs, includeUsage: Boolean(body.stream_options?.include_usage) };
}

const header = (model: ServedModel) => ({
  id: `cmpl-${Date.now().toString(36)}`,
  object: 'text_completion' as const,
  created: Math.floor(Date.now() / 1000),
  model: model.name,
});

function usage(answers: PromptAnswer[]) {
  const prompt_tokens = answers.reduce((a, x) => a + x.ids.length, 0);
  const completion_tokens = answers.reduce((a, x) => a + x.samples.reduce((b, s) => b + (s?.tokens.length ?? 0), 0), 0);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** The log-probs of `tokens` (their text offsets from `offset`): a prompt's, the first null, or a sample's. */
function logprobsOf(
  model: ServedModel,
  tokens: readonly number[],
  logprobs: ReadonlyArray<number | null>,
  argmax: ReadonlyArray<{ token: number; logprob: number } | undefined>,
  k: number,
  offset: number,
): Logprobs {
  const strings = tokens.map((t) => model.piece(t));
  const text_offset: number[] = [];
  strings.reduce((at, s) => {
    text_offset.push(at);
    return at + s.length;
  }, offset);
  return {
    tokens: strings,
    token_logprobs: [...logprobs],
    top_logprobs: tokens.map((token, i) => {
      const lp = logprobs[i];
      if (lp === null || lp === undefined) return null;
      const entry: Record<string, number> = {};
      const best = argmax[i];
      if (k >= 1 && best) entry[model.piece(best.token)] = best.logprob;
      entry[model.piece(token)] = lp;
      return entry;
    }),
    text_offset,
  };
}

/** Where an echoed prompt's token texts end: the first generated token's text offset. */
const echoEnd = (model: ServedModel, ids: readonly number[]) => ids.reduce((at, id) => at + model.piece(id).length, 0);

/** The prompt's tokens as echo shows them: the first has no log-prob. */
const echoedLogprobs = (model: ServedModel, ids: number[], echoed: ScoreResult, k: number) =>
  logprobsOf(model, ids, [null, ...echoed.tokenLogprobs], [undefined, ...(echoed.argmax ?? [])], k, 0);

function concat(a: Logprobs, b: Logprobs): Logprobs {
  return {
    tokens: [...a.tokens, ...b.tokens],
    token_logprobs: [...a.token_logprobs, ...b.token_logprobs],
    top_logprobs: [...a.top_logprobs, ...b.top_logprobs],
    text_offset: [...a.text_offset, ...b.text_offset],
  };
}

export async function completion(model: ServedModel, plan: CompletionPlan) {
  const { generation: g, logprobs: k } = plan;
  const answers = await answerPrompts(model, plan.prompts, g);
  const choices = answers.flatMap(({ ids, echoed, samples }, p) => {
    const promptText = g.echo ? model.backend.decode(ids) : '';
    return samples.map((sample, j) => {
      let logprobs: Logprobs | null = null;
      if (k !== undefined) {
        const generated = sampleLogprobs(model, sample, k, g.echo ? echoEnd(model, ids) : 0);
        logprobs = echoed && g.echo ? concat(echoedLogprobs(model, ids, echoed, k), generated) : generated;
      }
      return {
        index: p * g.n + j,
        text: promptText + (sample?.text ?? ''),
        logprobs,
        finish_reason: finishReason(sample),
        stop_reason: sample?.stop ?? null,
      };
    });
  });
  return { ...header(model), choices, usage: usage(answers) };
}

function sampleLogprobs(model: ServedModel, sample: Sample | null, k: number, offset: number): Logprobs {
  return logprobsOf(model, sample?.tokens ?? [], sample?.tokenLogprobs ?? [], sample?.argmax ?? [], k, offset);
}

/**
 * The same answer as a stream: per choice, the echoed prompt first, then the text as it is
 * drawn (one event per token group that adds text), its last event carrying finish_reason;
 * the usage at the end where asked.
 */
export async function streamCompletion(model: ServedModel, plan: CompletionPlan, stream: EventStream): Promise<void> {
  const { generation: g, logprobs: k } = plan;
  const head = header(model);
  const chunk = (index: number, text: string, logprobs: Logprobs | null, sample?: Sample | null) =>
    stream.send({
      ...head,
      choices: [
        {
          index,
          text,
          logprobs,
          finish_reason: sample === undefined ? null : finishReason(sample),
          stop_reason: sample === undefined ? null : (sample?.stop ?? null),
        },
      ],
    });
  // Per choice: text and tokens sent so far, where its next offset starts, whether it has finished.
  const sent = plan.prompts.map((ids) =>
    Array.from({ length: g.n }, () => ({ text: 0, tokens: 0, offset: g.echo ? echoEnd(model, ids) : 0, done: false })),
  );
  const send = (
    p: number,
    j: number,
    tokens: readonly number[],
    lps: readonly number[],
    argmax: ReadonlyArray<{ token: number; logprob: number }>,
    text: string,
    done: Sample | null | undefined,
  ) => {
    const at = sent[p]![j]!;
    const upTo = done === undefined ? sendableLength(text, g.stop) : text.length;
    if (upTo <= at.text && done === undefined) return; // nothing new to say yet: the tokens go with the next event
    const logprobs =
      k === undefined ? null : logprobsOf(model, tokens.slice(at.tokens), lps.slice(at.tokens), argmax.slice(at.tokens), k, at.offset);
    chunk(p * g.n + j, text.slice(at.text, upTo), logprobs, done);
    at.offset += logprobs ? logprobs.tokens.join('').length : 0;
    at.text = Math.max(at.text, upTo);
    at.tokens = tokens.length;
    at.done = done !== undefined;
  };
  const echo = (echoed: Array<ScoreResult | undefined>) =>
    plan.prompts.forEach((ids, p) => {
      for (let j = 0; j < g.n; j++)
        chunk(p * g.n + j, model.backend.decode(ids), k === undefined ? null : echoedLogprobs(model, ids, echoed[p]!, k));
    });
  // One pass scores the prompt and finds the greedy token: its echo comes with its answer. Otherwise the echo comes before the samples.
  const onePass = scoresOnly(g);
  if (g.echo && !onePass) echo(await Promise.all(plan.prompts.map((ids) => model.worker.score(ids))));
  const answers = await answerPrompts(model, plan.prompts, onePass ? g : { ...g, echo: false }, (p) => ({
    signal: stream.signal,
    onDraw: (j, draft, done) => send(p, j, draft.tokens, draft.tokenLogprobs, draft.argmax, done ? done.text : draft.text, done),
  }));
  if (onePass) echo(answers.map((a) => a.echoed));
  // Choices no draw reported (max_tokens 0, the one-pass greedy token): their whole answer now.
  answers.forEach(({ samples }, p) => {
    samples.forEach((sample, j) => {
      if (!sent[p]![j]!.done)
        send(p, j, sample?.tokens ?? [], sample?.tokenLogprobs ?? [], sample?.argmax ?? [], sample?.text ?? '', sample);
    });
  });
  if (plan.includeUsage) stream.send({ ...head, choices: [], usage: usage(answers) });
  stream.end();
}
