/**
 * What completions and chat share: a request's prompts as token ids, checked against the
 * window; each prompt scored (echo) and continued n times, all prompts of a request in one
 * batch (scoring prompts wait together for one batched pass, sampled prompts advance in the
 * same decode steps); and a watcher per prompt for a stream.
 */
import { bosHead } from '../backends/bos.ts';
import type { OnnxBackend } from '../backends/onnx/backend.ts';
import type { SampleWatch } from '../backends/onnx/sample-draws.ts';
import type { Sample, ScoreResult } from '../backends/types.ts';
import type { ModelWorker } from './model-worker.ts';
import { BadRequest } from './requests.ts';

/** The model behind the server, and what every answer needs of it. */
export class ServedModel {
  /** Echo answers name every prompt token as text: each id decoded once. */
  private readonly pieces = new Map<number, string>();
  /** The tokenizer's own special tokens, as vLLM adds them to a text prompt (a BOS where the tokenizer asks for one). */
  readonly specials: number[];

  constructor(
    readonly backend: OnnxBackend,
    readonly worker: ModelWorker,
    readonly name: string,
  ) {
    this.specials = bosHead(backend.bosUse);
  }

  piece(id: number): string {
    let text = this.pieces.get(id);
    if (text === undefined) this.pieces.set(id, (text = this.backend.decode([id])));
    return text;
  }

  /** A prompt as token ids: a text prompt encoded after the tokenizer's specials; token ids as the client gave them. */
  idsOf(prompt: string | number[]): number[] {
    return typeof prompt === 'string' ? [...this.specials, ...this.backend.encode(prompt)] : prompt;
  }
}

/** How a request's prompts are continued. */
export interface Generation {
  n: number;
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number | undefined;
  stop: string[];
  seed: number;
  echo: boolean;
  /** Record each generated token's most likely alternative (top_logprobs). */
  argmax: boolean;
}

/** One prompt's answer: its ids, its scores where echoed, and its n samples (null: max_tokens 0). */
export interface PromptAnswer {
  ids: number[];
  echoed: ScoreResult | undefined;
  samples: Array<Sample | null>;
}

/** The prompts, each checked: not empty, and room in the window for it and max_tokens. */
export function checkPrompts(model: ServedModel, prompts: number[][], g: Generation): void {
  const window = model.backend.window;
  for (const ids of prompts) {
    if (ids.length === 0) throw new BadRequest('"prompt" is empty');
    if (ids.length + g.maxTokens > window)
      throw new BadRequest(
        `this model's maximum context length is ${window} tokens; the prompt has ${ids.length} and max_tokens is ${g.maxTokens}`,
      );
  }
}

/** How scoring clients ask (echo, one greedy token): one forward pass per prompt, batched across prompts. */
export const scoresOnly = (g: Generation) => g.echo && g.maxTokens <= 1 && g.temperature === 0 && g.n === 1 && g.stop.length === 0;

/** Every prompt's answer, in prompt order; `watch(p)` watches prompt p's samples as they are drawn. */
export async function answerPrompts(
  model: ServedModel,
  prompts: number[][],
  g: Generation,
  watch?: (prompt: number) => SampleWatch,
): Promise<PromptAnswer[]> {
  const { backend, worker } = model;
  if (scoresOnly(g))
    return Promise.all(
      prompts.map(async (ids) => {
        // A placeholder token after the prompt makes the pass compute the next-token row too; its argmax is the greedy token.
        const scored = await worker.score([...ids, 0]);
        const echoed = {
          ...scored,
          tokenLogprobs: scored.tokenLogprobs.slice(0, -1),
          tokens: scored.tokens.slice(0, -1),
          argmax: scored.argmax?.slice(0, -1),
        };
        const next = scored.argmax!.at(-1)!;
        const sample: Sample | null =
          g.maxTokens === 0
            ? null
            : {
                text: backend.decode([next.token]),
                tokens: [next.token],
                logprob: next.logprob,
                tokenLogprobs: [next.logprob],
                argmax: [next],
                finishReason: 'length',
                truncated: false,
              };
        return { ids, echoed, samples: [sample] };
      }),
    );
  const request = {
    prompt: '',
    n: g.n,
    temperature: g.temperature,
    topP: g.topP,
    ...(g.topK ? { topK: g.topK } : {}),
    maxTokens: g.maxTokens,
    stop: g.stop,
    seed: g.seed,
  };
  // One job on the model: every prompt's samples advance in the same decode steps.
  const samples: Array<Array<Sample | null>> =
    g.maxTokens === 0
      ? prompts.map(() => Array.from({ length: g.n }, () => null))
      : await worker.run(() =>
          Promise.all(
            prompts.map((ids, p) => {
              const watched = watch?.(p);
              return backend.sampleIds(ids, request, [], {
                ...watched,
                argmax: g.argmax,
                onDraw: (index, draft, done) => {
                  worker.stats.drawn_tokens++;
                  watched?.onDraw?.(index, draft, done);
                },
              });
            }),
          ),
        );
  const echoed = g.echo ? await Promise.all(prompts.map((ids) => worker.score(ids))) : [];
  return prompts.map((ids, p) => ({ ids, echoed: echoed[p], samples: samples[p]! }));
}

/** OpenAI's finish_reason for a sample (none: max_tokens 0, the length). */
export function finishReason(sample: Sample | null): 'stop' | 'length' {
  return sample === null || sample.finishReason === 'length' ? 'length' : 'stop';
}

/** How much of `text` may be sent while it is still growing: all but an ending that could begin a stop string. */
export function sendableLength(text: string, stops: readonly string[]): number {
  let keep = text.length;
  for (const stop of stops)
    for (let length = Math.min(stop.length - 1, text.length); length > 0; length--)
      if (text.endsWith(stop.slice(0, length))) {
        keep = Math.min(keep, text.length - length);
        break;
      }
  return keep;
}
