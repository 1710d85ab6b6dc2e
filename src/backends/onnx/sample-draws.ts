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

export class SampleDraws {
  readonly tokens: number[] = [];
  private readonly tokenLogprobs: number[] = [];
  private logprob = 0;
  private readonly rng: Rng;
  private readonly params: SamplingParams;
  private readonly text: IncrementalText;

  constructor(
    private readonly request: SampleRequest,
    index: number,
    private readonly truncated: boolean,
    private readonly tokenizer: CheckpointTokenizer,
  ) {
    this.rng = createRng('sample', request.seed, index);
    this.params = { temperature: request.temperature, topP: request.topP, topK: request.topK };
    this.text = new IncrementalText(tokenizer, request.stop);
  }

  /**
   * Draws the next token from the row predicting it — logits (drawn in float64 here), or
   * the decode graph's probabilities and log-probabilities (prefix-decoder.ts) — and
   * returns the finished sample when it ends the sequence.
   */
  draw(row: NextToken): Sample | undefined {
    let token: number;
    let lp: number;
    if (row instanceof Float32Array) {
      token = chooseToken(row, this.params, this.rng);
      lp = logSoftmaxAt(row, 0, row.length, token).logprob;
    } else {
      // The step returned what this temperature reads (prefix-decoder.ts DecodedRows).
      token = this.params.temperature > 0 ? chooseTokenFromProbs(row.probs!, this.params, this.rng) : firstMaximum(row.logprobs!);
      lp = row.logprobs ? row.logprobs[token]! : Math.log(row.probs![token]!);
    }
    this.logprob += lp;
    this.tokenLogprobs.push(lp);
    this.tokens.push(token);
    const base = { tokens: this.tokens, logprob: this.logprob, truncated: this.truncated, tokenLogprobs: this.tokenLogprobs };
    if (this.tokenizer.eosIds.has(token)) return { text: this.text.value, ...base, finishReason: 'eos' };
    const stop = this.text.push(token, this.tokens);
    if (stop !== undefined) return { text: this.text.value, ...base, finishReason: 'stop', stop };
    if (this.tokens.length >= this.request.maxTokens) return { text: this.text.value, ...base, finishReason: 'length' };
    return undefined;
  }

  get lastToken(): number {
    return this.tokens[this.tokens.length - 1]!;
  }
}
