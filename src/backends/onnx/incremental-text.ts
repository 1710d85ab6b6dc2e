/** Generated text so far, decoded incrementally, with stop-string detection. */
import type { CheckpointTokenizer } from './tokenizer.ts';

export class IncrementalText {
  value = '';
  private readonly decoder = new TextDecoder('utf-8');
  private readonly longestStop: number;

  constructor(
    private readonly tokenizer: CheckpointTokenizer,
    private readonly stops: string[],
  ) {
    // A reduce, not Math.max(...): a spread of very many stops would exceed the arguments a call may take.
    this.longestStop = stops.reduce((longest, s) => Math.max(longest, s.length), 0);
  }

  /** Appends a token; returns the stop string if one now occurs (the text is cut before it). */
  push(token: number, all: number[]): string | undefined {
    const before = this.value.length;
    const bytes = this.tokenizer.bytesOf(token);
    this.value = bytes ? this.value + this.decoder.decode(bytes, { stream: true }) : this.tokenizer.decode(all);
    if (this.stops.length === 0) return undefined;
    const from = Math.max(0, before - this.longestStop + 1);
    let earliest = -1;
    let matched: string | undefined;
    for (const stop of this.stops) {
      if (stop === '') continue;
      const at = this.value.indexOf(stop, from);
      if (at >= 0 && (earliest < 0 || at < earliest)) {
        earliest = at;
        matched = stop;
      }
    }
    if (matched !== undefined) this.value = this.value.slice(0, earliest);
    return matched;
  }
}
