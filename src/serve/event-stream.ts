/**
 * Server-sent events as OpenAI and vLLM stream them: `data: {json}` per chunk, then
 * `data: [DONE]`. A client that goes away aborts `signal`, which stops the model's rows
 * for it (sample-draws.ts `SampleWatch`).
 */
import type { ServerResponse } from 'node:http';

/** Aborted when the client goes away before its answer is written: what stops the model's rows for it, streamed or not. */
export function clientGone(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort(new Error('the client went away before its answer'));
  });
  return gone.signal;
}

export class EventStream {
  /** Aborted when the client is gone. */
  readonly signal: AbortSignal;
  private started = false;

  constructor(private readonly res: ServerResponse) {
    this.signal = clientGone(res);
  }

  send(value: unknown): void {
    if (this.signal.aborted) return;
    this.open();
    this.res.write(`data: ${JSON.stringify(value)}\n\n`);
  }

  /** Ends the stream: `[DONE]`, after a failure mid-stream the error first, as vLLM sends it. */
  end(error?: { message: string; type: string; code: number }): void {
    if (this.signal.aborted) return;
    if (error) this.send({ error });
    this.open();
    this.res.end('data: [DONE]\n\n');
  }

  private open(): void {
    if (this.started) return;
    this.started = true;
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  }
}
