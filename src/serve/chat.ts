/**
 * `/v1/chat/completions`: the conversation rendered by the checkpoint's own chat template
 * (tokenizer_config.json `chat_template`, as vLLM renders it: the assistant's turn opened,
 * the text encoded without further special tokens), then continued as a completion. A
 * base model has no template: a 400 says so, never an empty answer.
 */
import type { Sample } from '../backends/types.ts';
import type { EventStream } from './event-stream.ts';
import { answerPrompts, checkPrompts, finishReason, type Generation, sendableLength, type ServedModel } from './generate.ts';
import { BadRequest, type ChatRequest, stopsOf } from './requests.ts';

export interface ChatPlan {
  prompt: number[];
  generation: Generation;
  /** `logprobs: true`: the tokens' log-probs, with `top_logprobs` (0 or 1) alternatives. */
  logprobs: number | undefined;
  includeUsage: boolean;
}

export function planChat(model: ServedModel, body: ChatRequest): ChatPlan {
  if (model.backend.chatTemplate === undefined)
    throw new BadRequest(
      `${model.name} is a base model with no chat template (no chat_template in its tokenizer_config.json): use /v1/completions with a prompt`,
    );
  const messages = body.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((part) => part.text).join(''),
  }));
  // The template writes its own special tokens (a BOS among them, where it has one): none are added.
  const prompt = model.backend.encode(model.backend.renderChat(messages));
  const generation: Generation = {
    n: body.n ?? 1,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? Math.max(1, model.backend.window - prompt.length),
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k && body.top_k > 0 ? body.top_k : undefined,
    stop: stopsOf(body.stop),
    seed: body.seed ?? 0,
    echo: false,
    argmax: Boolean(body.logprobs) && (body.top_logprobs ?? 0) >= 1,
  };
  checkPrompts(model, [prompt], generation);
  return {
    prompt,
    generation,
    logprobs: body.logprobs ? (body.top_logprobs ?? 0) : undefined,
    includeUsage: Boolean(body.stream_options?.include_usage),
  };
}

const header = (model: ServedModel, object: string) => ({
  id: `chatcmpl-${Date.now().toString(36)}`,
  object,
  created: Math.floor(Date.now() / 1000),
  model: model.name,
});

/** Chat's log-probs: one entry per token, with its bytes and its alternatives. */
function contentLogprobs(
  model: ServedModel,
  tokens: readonly number[],
  logprobs: readonly number[],
  argmax: ReadonlyArray<{ token: number; logprob: number }>,
  k: number,
) {
  const entry = (token: number, logprob: number) => {
    const text = model.piece(token);
    return { token: text, logprob, bytes: [...new TextEncoder().encode(text)] };
  };
  return {
    content: tokens.map((token, i) => ({
      ...entry(token, logprobs[i]!),
      top_logprobs: k >= 1 && argmax[i] ? [entry(argmax[i]!.token, argmax[i]!.logprob)] : [],
    })),
  };
}

const usageOf = (prompt: number[], samples: Array<Sample | null>) => {
  const completion_tokens = samples.reduce((a, s) => a + (s?.tokens.length ?? 0), 0);
  return { prompt_tokens: prompt.length, completion_tokens, total_tokens: prompt.length + completion_tokens };
};

export async function chat(model: ServedModel, plan: ChatPlan) {
  const [answer] = await answerPrompts(model, [plan.prompt], plan.generation);
  const choices = answer!.samples.map((sample, index) => ({
    index,
    message: { role: 'assistant', content: sample?.text ?? '' },
    logprobs:
      plan.logprobs === undefined
        ? null
        : contentLogprobs(model, sample?.tokens ?? [], sample?.tokenLogprobs ?? [], sample?.argmax ?? [], plan.logprobs),
    finish_reason: finishReason(sample),
    stop_reason: sample?.stop ?? null,
  }));
  return { ...header(model, 'chat.completion'), choices, usage: usageOf(plan.prompt, answer!.samples) };
}

/** The same as a stream of `chat.completion.chunk`s: the role first, then the content as it is drawn, the last with finish_reason. */
export async function streamChat(model: ServedModel, plan: ChatPlan, stream: EventStream): Promise<void> {
  const g = plan.generation;
  const head = header(model, 'chat.completion.chunk');
  const sent = Array.from({ length: g.n }, () => ({ text: 0, tokens: 0 }));
  for (let index = 0; index < g.n; index++)
    stream.send({ ...head, choices: [{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
  const [answer] = await answerPrompts(model, [plan.prompt], g, () => ({
    signal: stream.signal,
    onDraw: (index, draft, done) => {
      const at = sent[index]!;
      const text = done ? done.text : draft.text;
      const upTo = done ? text.length : sendableLength(text, g.stop);
      if (upTo <= at.text && !done) return;
      const logprobs =
        plan.logprobs === undefined
          ? null
          : contentLogprobs(
              model,
              draft.tokens.slice(at.tokens),
              draft.tokenLogprobs.slice(at.tokens),
              draft.argmax.slice(at.tokens),
              plan.logprobs,
            );
      stream.send({
        ...head,
        choices: [{ index, delta: { content: text.slice(at.text, upTo) }, logprobs, finish_reason: done ? finishReason(done) : null }],
      });
      at.text = Math.max(at.text, upTo);
      at.tokens = draft.tokens.length;
    },
  }));
  if (plan.includeUsage) stream.send({ ...head, choices: [], usage: usageOf(plan.prompt, answer!.samples) });
  stream.end();
}
