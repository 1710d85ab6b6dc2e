/**
 * `/v1/chat/completions`: the conversation rendered by the checkpoint's own chat template
 * (tokenizer_config.json `chat_template`, as vLLM renders it: the assistant's turn opened,
 * the text encoded without further special tokens), then continued as a completion. A
 * base model has no template: a 400 says so, never an empty answer.
 */
import type { SampleDraft } from '../backends/onnx/sample-draws.ts';
import type { Sample } from '../backends/types.ts';
import type { EventStream } from './event-stream.ts';
import {
  answerId,
  answerPrompts,
  ChoiceProgress,
  checkPrompts,
  finishReason,
  generationOf,
  type Generation,
  type ServedModel,
} from './generate.ts';
import { BadRequest, type ChatRequest } from './requests.ts';

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
  let rendered: string;
  try {
    rendered = model.backend.renderChat(messages);
  } catch (error) {
    // The template's own refusals (raise_exception: "roles must alternate") are about the request.
    throw new BadRequest(`the chat template refused the messages: ${error instanceof Error ? error.message : String(error)}`);
  }
  // The template writes its own special tokens (a BOS among them, where it has one): none are added.
  const prompt = model.backend.encode(rendered);
  const generation = generationOf(body, {
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? Math.max(1, model.backend.window - prompt.length),
    echo: false,
    argmax: Boolean(body.logprobs) && (body.top_logprobs ?? 0) >= 1,
  });
  checkPrompts(model, [prompt], generation);
  return {
    prompt,
    generation,
    logprobs: body.logprobs ? (body.top_logprobs ?? 0) : undefined,
    includeUsage: Boolean(body.stream_options?.include_usage),
  };
}

const header = (model: ServedModel, object: string) => ({
  id: answerId('chatcmpl'),
  object,
  created: Math.floor(Date.now() / 1000),
  model: model.name,
});

/** Chat's log-probs: one entry per token, with its exact bytes and its alternatives. */
function contentLogprobs(model: ServedModel, draft: SampleDraft, from: number, to: number, k: number) {
  const entry = (token: number, logprob: number) => ({
    token: model.piece(token),
    logprob,
    bytes: [...(model.backend.bytesOf(token) ?? new TextEncoder().encode(model.piece(token)))],
  });
  return {
    content: draft.tokens.slice(from, to).map((token, i) => {
      const best = draft.argmax[from + i];
      return { ...entry(token, draft.tokenLogprobs[from + i]!), top_logprobs: k >= 1 && best ? [entry(best.token, best.logprob)] : [] };
    }),
  };
}

const usageOf = (prompt: number[], samples: Array<Sample | null>) => {
  const completion_tokens = samples.reduce((a, s) => a + (s?.tokens.length ?? 0), 0);
  return { prompt_tokens: prompt.length, completion_tokens, total_tokens: prompt.length + completion_tokens };
};

export async function chat(model: ServedModel, plan: ChatPlan, signal: AbortSignal) {
  const [answer] = await answerPrompts(model, [plan.prompt], plan.generation, signal);
  const choices = answer!.samples.map((sample, index) => {
    const draft = { tokens: sample?.tokens ?? [], tokenLogprobs: sample?.tokenLogprobs ?? [], argmax: sample?.argmax ?? [], text: '' };
    return {
      index,
      message: { role: 'assistant', content: sample?.text ?? '' },
      logprobs: plan.logprobs === undefined ? null : contentLogprobs(model, draft, 0, draft.tokens.length, plan.logprobs),
      finish_reason: finishReason(sample),
      stop_reason: sample?.stop ?? null,
    };
  });
  return { ...header(model, 'chat.completion'), choices, usage: usageOf(plan.prompt, answer!.samples) };
}

/** The same as a stream of `chat.completion.chunk`s: the role first, then the content as it is drawn, the last with finish_reason. */
export async function streamChat(model: ServedModel, plan: ChatPlan, stream: EventStream): Promise<void> {
  const g = plan.generation;
  const head = header(model, 'chat.completion.chunk');
  const sent = Array.from({ length: g.n }, () => new ChoiceProgress(g.stop));
  for (let index = 0; index < g.n; index++)
    stream.send({ ...head, choices: [{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
  const [answer] = await answerPrompts(model, [plan.prompt], g, stream.signal, () => ({
    onDraw: (index, draft, done) => {
      const delta = sent[index]!.next(draft.text, draft.tokens.length, done !== undefined);
      if (!delta) return;
      const logprobs = plan.logprobs === undefined ? null : contentLogprobs(model, draft, delta.from, delta.to, plan.logprobs);
      stream.send({
        ...head,
        choices: [
          {
            index,
            delta: { content: delta.text },
            logprobs,
            finish_reason: done ? finishReason(done) : null,
            stop_reason: done ? (done.stop ?? null) : null,
          },
        ],
      });
    },
  }));
  if (plan.includeUsage) stream.send({ ...head, choices: [], usage: usageOf(plan.prompt, answer!.samples) });
  stream.end();
}
