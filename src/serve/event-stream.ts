/**
 * Server-sent events as OpenAI and vLLM stream them: `data: {json}` per chunk, then
 * `data: [DONE]`. A client that goes away aborts `signal`, which stops the model's rows
 * for it (sample-draws.ts `SampleWatch`).
 */
import type { ServerResponse } from 'node:http';

export class EventStream {
  private readonly controller = new AbortController();
  private started = false;

  constructor(private readonly res: ServerResponse) {
    res.on('close', () => {
      if (!res.writableFinished) this.controller.abort(new Error('the client closed the stream'));
    });
  }

  /** Aborted when the client is gone. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  send(value: unknown): void {
    if (this.controller.signal.aborted) return;
    this.open();
    this.res.write(`data: ${JSON.stringify(value)}\n\n`);
  }

  /** Ends the stream: `[DONE]`, after a failure mid-stream the error first, as vLLM sends it. */
  end(error?: { message: string; type: string; code: number }): void {
    if (this.controller.signal.aborted) return;
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
