/**
 * What completions and chat share: a request's prompts as token ids, checked against the
 * window; each prompt scored (echo) and continued n times, all prompts of a request in one
 * batch (scoring prompts wait together for one batched pass, sampled prompts advance in the
 * same decode steps); and a watcher per prompt for a stream.
 */
import { randomUUID } from 'node:crypto';
import { bosHead } from '../backends/bos.ts';
import type { OnnxBackend } from '../backends/onnx/backend.ts';
import type { SampleWatch } from '../backends/onnx/sample-draws.ts';
import type { Sample, ScoreResult } from '../backends/types.ts';
import type { ModelWorker } from './model-worker.ts';
import { BadRequest, type SamplingFields, stopsOf } from './requests.ts';

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

  /**
   * A token as the API names it: its text, or — where its bytes are not whole characters (a
   * piece of a multi-byte character) — `bytes:\xNN…`, as OpenAI writes it, so that two
   * different tokens are never one key of `top_logprobs`.
   */
  piece(id: number): string {
    let text = this.pieces.get(id);
    if (text === undefined) {
      const bytes = this.backend.bytesOf(id);
      text =
        bytes && !wholeCharacters(bytes)
          ? `bytes:${[...bytes].map((b) => `\\x${b.toString(16).padStart(2, '0')}`).join('')}`
          : this.backend.decode([id]);
      this.pieces.set(id, text);
    }
    return text;
  }

  /**
   * Tokens' text offsets, one token at a time in order: where each token's text starts in
   * the text they decode to, from `offset` (a piece of a character counts once the character
   * is whole). One counter per choice, so a stream's offsets are the whole answer's.
   */
  offsetCounter(offset = 0): (id: number) => number {
    const decoder = new TextDecoder('utf-8');
    let at = offset;
    return (id) => {
      const start = at;
      const bytes = this.backend.bytesOf(id);
      at += bytes ? decoder.decode(bytes, { stream: true }).length : this.piece(id).length;
      return start;
    };
  }

  /** A prompt as token ids: a text prompt encoded after the tokenizer's specials; token ids as the client gave them. */
  idsOf(prompt: string | number[]): number[] {
    return typeof prompt === 'string' ? [...this.specials, ...this.backend.encode(prompt)] : prompt;
  }

  /** The scores echo shows for a prompt: one pass over it (a one-token prompt has no scored token: its first has no log-prob). */
  async echoScores(ids: number[]): Promise<ScoreResult> {
    if (ids.length > 1) return this.worker.score(ids);
    return { tokenLogprobs: [], tokens: [], bytes: 0, greedy: true, truncated: false, argmax: [] };
  }
}

const fatal = new TextDecoder('utf-8', { fatal: true });
function wholeCharacters(bytes: Uint8Array): boolean {
  try {
    fatal.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** An answer's id: unique, as OpenAI's are, whatever answers at the same moment. */
export const answerId = (prefix: string) => `${prefix}-${randomUUID().replaceAll('-', '')}`;

/**
 * What one streamed choice has sent: its text (all but an ending that could begin a stop,
 * until it finishes) and its tokens. `next` gives what the next event carries, or undefined
 * while there is nothing new to say (the tokens drawn meanwhile go with the next event).
 */
export class ChoiceProgress {
  private text = 0;
  private tokens = 0;

  constructor(private readonly stops: readonly string[]) {}

  next(text: string, tokens: number, done: boolean): { text: string; from: number; to: number } | undefined {
    const upTo = done ? text.length : sendableLength(text, this.stops);
    if (upTo <= this.text && !done) return undefined;
    const delta = { text: text.slice(this.text, upTo), from: this.tokens, to: tokens };
    this.text = Math.max(this.text, upTo);
    this.tokens = tokens;
    return delta;
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

/** A request's sampling fields as a Generation, with OpenAI's defaults (n 1, temperature 1, top_p 1; a top_k of -1 or 0 is none). */
export function generationOf(body: SamplingFields, rest: Pick<Generation, 'maxTokens' | 'echo' | 'argmax'>): Generation {
  return {
    n: body.n ?? 1,
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k && body.top_k > 0 ? body.top_k : undefined,
    stop: stopsOf(body.stop),
    seed: body.seed ?? 0,
    ...rest,
  };
}

/** One prompt's answer: its ids, its scores where echoed, and its n samples (null: max_tokens 0). */
export interface PromptAnswer {
  ids: number[];
  echoed: ScoreResult | undefined;
  samples: Array<Sample | null>;
}

/** The prompts, each checked: not empty, and room in the window for it and max_tokens. */
export function checkPrompts(model: ServedModel, prompts: number[][], g: Generation): void {
  const vocab = model.backend.vocabSize;
  const window = model.backend.window;
  for (const ids of prompts) {
    if (ids.length === 0) throw new BadRequest('"prompt" is empty');
    const outside = ids.find((id) => id >= vocab);
    if (outside !== undefined) throw new BadRequest(`"prompt": ${outside} is not a token id of this model (0 to ${vocab - 1})`);
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
  signal: AbortSignal,
  watch?: (prompt: number) => SampleWatch,
): Promise<PromptAnswer[]> {
  const { backend, worker } = model;
  // Stopped when the client goes away, or when a watcher fails: that request's rows alone end, with its error.
  const stopped = new AbortController();
  const stop = (reason: unknown) => stopped.abort(reason);
  if (signal.aborted) stop(signal.reason);
  else signal.addEventListener('abort', () => stop(signal.reason), { once: true });
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
        // The greedy token ends the sample as sampling would end it: an EOS is a stop with no text.
        const eos = backend.isEos(next.token);
        const sample: Sample | null =
          g.maxTokens === 0
            ? null
            : {
                text: eos ? '' : backend.decode([next.token]),
                tokens: [next.token],
                logprob: next.logprob,
                tokenLogprobs: [next.logprob],
                argmax: [next],
                finishReason: eos ? 'eos' : 'length',
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
                signal: stopped.signal,
                argmax: g.argmax,
                onDraw: (index, draft, done) => {
                  worker.stats.drawn_tokens++;
                  try {
                    watched?.onDraw?.(index, draft, done);
                  } catch (error) {
                    stop(error);
                  }
                },
              });
            }),
          ),
        );
  const echoed = g.echo ? await Promise.all(prompts.map((ids) => model.echoScores(ids))) : [];
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
