/**
 * Real HTTP servers on loopback for the HTTP backend's tests: `probe serve`'s server on an
 * embedded checkpoint, and a fault-injecting proxy in front of it.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OnnxBackend } from '../../src/backends/onnx/backend.ts';
import { createOpenAiServer } from '../../src/serve/openai-server.ts';

/** `port` 0 picks a free one; a fixed port lets a test put other weights behind the same URL. */
export async function listen(server: Server, port = 0): Promise<string> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

export async function serveCheckpoint(
  dir: string,
  batchWindowMs = 2,
  port = 0,
): Promise<{ url: string; server: Server; backend: OnnxBackend }> {
  const backend = await OnnxBackend.open(dir);
  const server = createOpenAiServer(backend, { model: 'test-model', batchWindowMs });
  return { url: await listen(server, port), server, backend };
}

/**
 * What the proxy does to one request: pass it, fail it, or pass it and rewrite the answer —
 * as JSON (`rewrite`, which also sees the request), or as text (`rewriteText`: what JSON
 * values cannot say, such as `1e999`, which a client parses to Infinity).
 */
export type Fault =
  | { kind: 'pass' }
  | { kind: 'drop' }
  | { kind: 'status'; status: number; retryAfter?: number }
  | { kind: 'rewrite'; rewrite: (answer: any, request: any) => any }
  | { kind: 'rewriteText'; rewrite: (text: string) => string };

/** A proxy that applies `faults` to requests in order (then passes), counting what it saw. */
export class FaultProxy {
  readonly seen: string[] = [];
  private readonly server: Server;
  url = '';

  constructor(
    /** Where requests go; a test may point it elsewhere (another server behind the same URL). */
    public target: string,
    public faults: Fault[] = [],
    private readonly match: (path: string) => boolean = () => true,
  ) {
    this.server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.seen.push(`${req.method} ${path}`);
      const fault: Fault = this.match(path) ? (this.faults.shift() ?? { kind: 'pass' }) : { kind: 'pass' };
      if (fault.kind === 'drop') {
        req.socket.destroy();
        return;
      }
      if (fault.kind === 'status') {
        res.writeHead(fault.status, {
          'content-type': 'application/json',
          ...(fault.retryAfter !== undefined ? { 'retry-after': String(fault.retryAfter) } : {}),
        });
        res.end(JSON.stringify({ error: { message: `injected ${fault.status}`, code: fault.status } }));
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const upstream = httpRequest(
          `${this.target}${path}`,
          { method: req.method, headers: { 'content-type': 'application/json' } },
          (up) => {
            const body: Buffer[] = [];
            up.on('data', (c) => body.push(c));
            up.on('end', () => {
              let text = Buffer.concat(body).toString('utf8');
              if (fault.kind === 'rewrite') {
                const request = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
                text = JSON.stringify(fault.rewrite(JSON.parse(text), request));
              }
              if (fault.kind === 'rewriteText') text = fault.rewrite(text);
              res.writeHead(up.statusCode ?? 500, { 'content-type': 'application/json' });
              res.end(text);
            });
          },
        );
        upstream.end(Buffer.concat(chunks));
      });
    });
  }

  async start(): Promise<string> {
    this.url = await listen(this.server);
    return this.url;
  }

  stop(): Promise<void> {
    return close(this.server);
  }
}
