/**
 * A scripted completion source: replays recorded completions in order, honouring the
 * request's stop strings as a server would (text before the earliest stop, `stop` says
 * which). Used only to drive the ASAP loop's recovery branches; the protocol itself is
 * tested end to end with the real embedded checkpoints.
 */
import type { CompletionBackend, Sample, SampleRequest } from '../../src/backends/types.ts';

export class ScriptedBackend implements CompletionBackend {
  readonly id = 'scripted';
  readonly prompts: string[] = [];
  private next = 0;
  /** The unread rest of the current completion, and the prompt that continues it. */
  private rest: { text: string; prompt: string } | undefined;

  constructor(private readonly completions: string[]) {}

  encode(text: string): number[] {
    return [...new TextEncoder().encode(text)];
  }

  async score(): Promise<never> {
    throw new Error('the scripted backend only samples');
  }

  async sample(requests: SampleRequest[]): Promise<Sample[][]> {
    return requests.map((request) => {
      this.prompts.push(request.prompt);
      // A prompt that extends the last one by exactly what was returned continues that completion.
      const continues = this.rest !== undefined && this.rest.text !== '' && request.prompt === this.rest.prompt;
      const text = continues ? this.rest!.text : this.completions[this.next++];
      if (text === undefined) throw new Error(`the script has only ${this.completions.length} completions`);
      let cut = text.length;
      let stop: string | undefined;
      for (const s of request.stop) {
        const at = text.indexOf(s);
        if (at >= 0 && at < cut) [cut, stop] = [at, s];
      }
      const kept = text.slice(0, cut);
      const consumed = cut + (stop?.length ?? 0);
      this.rest = { text: text.slice(consumed), prompt: request.prompt + text.slice(0, consumed) };
      return [
        {
          text: kept,
          tokens: this.encode(kept),
          logprob: 0,
          finishReason: stop ? 'stop' : 'length',
          ...(stop ? { stop } : {}),
          truncated: false,
        },
      ];
    });
  }

  get used(): number {
    return this.next;
  }

  async close(): Promise<void> {}
}
