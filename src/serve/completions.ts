/**
 * `/v1/completions` as the OpenAI API and vLLM answer it: one prompt or a batch (a string,
 * token ids, or a list of either), choices indexed prompt by prompt and then by sample;
 * `echo` with the prompt's log-probs (the first null); `logprobs` 0 or 1 (`top_logprobs`:
 * the token, and with 1 the most likely one); and `stream`, one event per token group as
 * the model draws it, text held back only while it could be the start of a stop string.
 */
import type { SampleDraft } from '../backends/onnx/sample-draws.ts';
import type { Sample, ScoreResult } from '../backends/types.ts';
import type { EventStream } from './event-stream.ts';
import {
  answerId,
  answerPrompts,
  ChoiceProgress,
  checkPrompts,
  finishReason,
  generationOf,
  type Generation,
  type PromptAnswer,
  scoresOnly,
  type ServedModel,
} from './generate.ts';
import { BadRequest, type CompletionRequest, promptsOf } from './requests.ts';

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
  const { window, vocabSize } = model.backend;
  const prompts = promptsOf(body.prompt, window, vocabSize).map((p) => model.idsOf(p));
  const echo = Boolean(body.echo);
  const maxTokens = body.max_tokens ?? 16;
  if (maxTokens === 0 && !echo) throw new BadRequest('"max_tokens" must be at least 1 (0 only with echo)');
  const logprobs = body.logprobs ?? undefined;
  const generation = generationOf(body, { maxTokens, echo, argmax: logprobs !== undefined && logprobs >= 1 });
  checkPrompts(model, prompts, generation);
  return { prompts, generation, logprobs, includeUsage: Boolean(body.stream_options?.include_usage) };
}

const header = (model: ServedModel) => ({
  id: answerId('cmpl'),
  object: 'text_completion' as const,
  created: Math.floor(Date.now() / 1000),
  model: model.name,
});

function usage(answers: PromptAnswer[]) {
  const prompt_tokens = answers.reduce((a, x) => a + x.ids.length, 0);
  const completion_tokens = answers.reduce((a, x) => a + x.samples.reduce((b, s) => b + (s?.tokens.length ?? 0), 0), 0);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

/** The log-probs of `tokens`, their text offsets counted by `offsetOf`: a prompt's (the first null) or a sample's. */
function logprobsOf(
  model: ServedModel,
  tokens: readonly number[],
  logprobs: ReadonlyArray<number | null>,
  argmax: ReadonlyArray<{ token: number; logprob: number } | undefined>,
  k: number,
  offsetOf: (id: number) => number,
): Logprobs {
  return {
    tokens: tokens.map((t) => model.piece(t)),
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
    text_offset: tokens.map(offsetOf),
  };
}

/** The prompt's tokens as echo shows them: the first has no log-prob. */
const echoedLogprobs = (model: ServedModel, ids: number[], echoed: ScoreResult, k: number) =>
  logprobsOf(model, ids, [null, ...echoed.tokenLogprobs], [undefined, ...(echoed.argmax ?? [])], k, model.offsetCounter());

const draftOf = (s: Sample): SampleDraft => ({
  tokens: s.tokens,
  tokenLogprobs: s.tokenLogprobs ?? [],
  argmax: s.argmax ?? [],
  text: s.text,
});

/** A choice that drew nothing (max_tokens 0). */
const NOTHING: SampleDraft = { tokens: [], tokenLogprobs: [], argmax: [], text: '' };

const sampleLogprobs = (model: ServedModel, sample: Sample | null, k: number, offset: number): Logprobs =>
  logprobsOf(model, sample?.tokens ?? [], sample?.tokenLogprobs ?? [], sample?.argmax ?? [], k, model.offsetCounter(offset));

function concat(a: Logprobs, b: Logprobs): Logprobs {
  return {
    tokens: [...a.tokens, ...b.tokens],
    token_logprobs: [...a.token_logprobs, ...b.token_logprobs],
    top_logprobs: [...a.top_logprobs, ...b.top_logprobs],
    text_offset: [...a.text_offset, ...b.text_offset],
  };
}

export async function completion(model: ServedModel, plan: CompletionPlan, signal: AbortSignal) {
  const { generation: g, logprobs: k } = plan;
  const answers = await answerPrompts(model, plan.prompts, g, signal);
  const choices = answers.flatMap(({ ids, echoed, samples }, p) => {
    const promptText = g.echo ? model.backend.decode(ids) : '';
    return samples.map((sample, j) => {
      let logprobs: Logprobs | null = null;
      if (k !== undefined) {
        const generated = sampleLogprobs(model, sample, k, promptText.length);
        logprobs = echoed ? concat(echoedLogprobs(model, ids, echoed, k), generated) : generated;
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

/**
 * The same answer as a stream: per choice, the echoed prompt first, then the text as it is
 * drawn (one event per token group that adds text), its last event carrying finish_reason;
 * the usage at the end where asked.
 */
export async function streamCompletion(model: ServedModel, plan: CompletionPlan, stream: EventStream): Promise<void> {
  const { generation: g, logprobs: k, prompts } = plan;
  const head = header(model);
  const event = (index: number, text: string, logprobs: Logprobs | null, done: Sample | null | undefined) =>
    stream.send({
      ...head,
      choices: [
        {
          index,
          text,
          logprobs,
          finish_reason: done === undefined ? null : finishReason(done),
          stop_reason: done === undefined ? null : (done?.stop ?? null),
        },
      ],
    });
  // Each prompt's text as echo shows it, decoded once.
  const promptTexts = prompts.map((ids) => (g.echo ? model.backend.decode(ids) : ''));
  // Per choice: what it has sent, its text offsets counted on from the echoed prompt, whether it has finished.
  const progress = promptTexts.map((promptText) =>
    Array.from({ length: g.n }, () => ({
      sent: new ChoiceProgress(g.stop),
      offsetOf: model.offsetCounter(promptText.length),
      done: false,
    })),
  );
  const send = (p: number, j: number, draft: SampleDraft, done: Sample | null | undefined) => {
    const choice = progress[p]![j]!;
    const delta = choice.sent.next(draft.text, draft.tokens.length, done !== undefined);
    if (!delta) return;
    const { from, to } = delta;
    const logprobs =
      k === undefined
        ? null
        : logprobsOf(
            model,
            draft.tokens.slice(from, to),
            draft.tokenLogprobs.slice(from, to),
            draft.argmax.slice(from, to),
            k,
            choice.offsetOf,
          );
    event(p * g.n + j, delta.text, logprobs, done);
    choice.done = done !== undefined;
  };
  const echo = (echoed: Array<ScoreResult | undefined>) =>
    prompts.forEach((ids, p) => {
      const logprobs = k === undefined ? null : echoedLogprobs(model, ids, echoed[p]!, k);
      for (let j = 0; j < g.n; j++) event(p * g.n + j, promptTexts[p]!, logprobs, undefined);
    });
  // One pass scores the prompt and finds the greedy token: its echo comes with its answer. Otherwise the echo comes before the samples.
  const onePass = scoresOnly(g);
  if (g.echo && !onePass) echo(await Promise.all(prompts.map((ids) => model.echoScores(ids))));
  const answers = await answerPrompts(model, prompts, onePass ? g : { ...g, echo: false }, stream.signal, (p) => ({
    onDraw: (j, draft, done) => send(p, j, draft, done),
  }));
  if (onePass && g.echo) echo(answers.map((a) => a.echoed));
  // Choices no draw reported (max_tokens 0, the one-pass greedy token): their whole answer now.
  answers.forEach(({ samples }, p) => {
    samples.forEach((sample, j) => {
      if (!progress[p]![j]!.done) send(p, j, sample ? draftOf(sample) : NOTHING, sample);
    });
  });
  if (plan.includeUsage) stream.send({ ...head, choices: [], usage: usage(answers) });
  stream.end();
}
