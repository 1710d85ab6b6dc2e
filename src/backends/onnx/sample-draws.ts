/**
 * One sample being generated, whatever drives the graph (the batched sampler or a graph
 * without a cache): its own random stream (`sample`, seed, index), its tokens and their
 * log-probs, its decoded text and stop check. Both paths draw through this, so a sample
 * is the same token for token given the same logits rows.
 */
import { createRng, type Rng } from '../../util/rng.ts';
import { chooseToken, chooseTokenFromProbs, firstMaximum, logSoftmaxAt, type SamplingParams } from '../logits.ts';
import type { Sample, SampleRequest } from '../types.ts';
import { IncrementalText } from './incremental-text.ts';
import type { DecodedRows } from './prefix-decoder.ts';
import type { CheckpointTokenizer } from './tokenizer.ts';

/** What predicts a sequence's next token: a logits row, or a decode-graph row's distributions. */
export type NextToken = Float32Array | DecodedRows;

/**
 * What a caller that watches samples as they are drawn gives (probe serve's stream): told of
 * every token drawn, and a signal that stops drawing (a client that went away frees its
 * rows). Not part of the request: the same samples are drawn, watched or not.
 */
export interface SampleWatch {
  /** After every token: the sample so far, and the finished sample when this token ended it. */
  onDraw?: (index: number, draft: SampleDraft, done: Sample | undefined) => void;
  signal?: AbortSignal;
  /** Record each token's most likely alternative too (`Sample.argmax`). */
  argmax?: boolean;
}

/** A sample being drawn, as a watcher sees it. */
export interface SampleDraft {
  readonly tokens: readonly number[];
  readonly tokenLogprobs: readonly number[];
  readonly argmax: ReadonlyArray<{ token: number; logprob: number }>;
  /** The decoded text so far (cut before a stop string once one occurs; a character's unfinished bytes not yet in it). */
  readonly text: string;
}

export class SampleDraws implements SampleDraft {
  readonly tokens: number[] = [];
  readonly tokenLogprobs: number[] = [];
  readonly argmax: Array<{ token: number; logprob: number }> = [];
  private logprob = 0;
  private readonly rng: Rng;
  private readonly params: SamplingParams;
  private readonly decodedText: IncrementalText;

  constructor(
    private readonly request: SampleRequest,
    private readonly index: number,
    private readonly truncated: boolean,
    private readonly tokenizer: CheckpointTokenizer,
    private readonly watch: SampleWatch = {},
  ) {
    this.rng = createRng('sample', request.seed, index);
    this.params = { temperature: request.temperature, topP: request.topP, topK: request.topK };
    this.decodedText = new IncrementalText(tokenizer, request.stop);
  }

  get text(): string {
    return this.decodedText.value;
  }

  /**
   * Draws the next token from the row predicting it — logits (drawn in float64 here), or
   * the decode graph's probabilities and log-probabilities (prefix-decoder.ts) — and
   * returns the finished sample when it ends the sequence.
   */
  draw(row: NextToken): Sample | undefined {
    let token: number;
    let lp: number;
    let best: { token: number; logprob: number } | undefined;
    if (row instanceof Float32Array) {
      token = chooseToken(row, this.params, this.rng);
      // One pass over the row gives the token's log-prob and the most likely token's.
      const scored = logSoftmaxAt(row, 0, row.length, token);
      lp = scored.logprob;
      best = { token: scored.argmax, logprob: scored.argmaxLogprob };
    } else {
      // The step returned what this temperature reads (prefix-decoder.ts DecodedRows): its log-probs, else its probabilities.
      const logprobOf = (t: number) => (row.logprobs ? row.logprobs[t]! : Math.log(row.probs![t]!));
      token = this.params.temperature > 0 ? chooseTokenFromProbs(row.probs!, this.params, this.rng) : firstMaximum(row.logprobs!);
      lp = logprobOf(token);
      if (this.watch.argmax) {
        const top = firstMaximum(row.logprobs ?? row.probs!);
        best = { token: top, logprob: logprobOf(top) };
      }
    }
    if (this.watch.argmax) this.argmax.push(best!);
    this.logprob += lp;
    this.tokenLogprobs.push(lp);
    this.tokens.push(token);
    const done = this.finished(token);
    this.watch.onDraw?.(this.index, this, done);
    return done;
  }

  private finished(token: number): Sample | undefined {
    const base = {
      tokens: this.tokens,
      logprob: this.logprob,
      truncated: this.truncated,
      tokenLogprobs: this.tokenLogprobs,
      ...(this.watch.argmax ? { argmax: this.argmax } : {}),
    };
    if (this.tokenizer.eosIds.has(token)) return { text: this.text, ...base, finishReason: 'eos' };
    const stop = this.decodedText.push(token, this.tokens);
    if (stop !== undefined) return { text: this.text, ...base, finishReason: 'stop', stop };
    if (this.tokens.length >= this.request.maxTokens) return { text: this.text, ...base, finishReason: 'length' };
    return undefined;
  }

  get lastToken(): number {
    return this.tokens[this.tokens.length - 1]!;
  }
}
