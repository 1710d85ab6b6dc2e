/**
 * A checkpoint served as an OpenAI-compatible server (`probe serve`): load a model once,
 * point many probe processes — or lm-evaluation-harness, the official `openai` client,
 * inspect — at it. Routes: `/v1/models`, `/v1/completions` (completions.ts),
 * `/v1/chat/completions` (chat.ts), `/tokenize`, `/detokenize`, `/health`. Every request
 * field is one the server implements or a 400 naming it (requests.ts). Errors use vLLM's
 * `{"error": {...}}` shape; a stream that fails sends the error as its last event.
 *
 * The model runs one job at a time (onnxruntime holds the thread while it runs); scoring
 * requests that wait together are batched into one forward pass (model-worker.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { OnnxBackend } from '../backends/onnx/backend.ts';
import { chat, planChat, streamChat } from './chat.ts';
import { completion, planCompletion, streamCompletion } from './completions.ts';
import { clientGone, EventStream } from './event-stream.ts';
import { ServedModel } from './generate.ts';
import { ModelWorker } from './model-worker.ts';
import { nestsDeeperThan } from '../util/json-depth.ts';
import { BadRequest, ChatRequest, CompletionRequest, checkRequest } from './requests.ts';

export interface ServeOptions {
  /** The model name `/v1/models` reports and requests may name. */
  model: string;
  /** Scoring requests run together at most (default 16). */
  maxBatch?: number;
  /** How long the model waits for more requests before a turn, in ms (default 2). */
  batchWindowMs?: number;
}

/** A request body larger than this is refused before it is parsed: a batch of prompts is large, a body without end is not. */
const MAX_BODY_BYTES = 64 * 2 ** 20;

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req) {
    bytes += (chunk as Buffer).length;
    if (bytes > MAX_BODY_BYTES) {
      req.destroy();
      throw new BadRequest(`the request body is larger than ${MAX_BODY_BYTES / 2 ** 20} MiB`);
    }
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new BadRequest('the request body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequest('the request body is not a JSON object');
  // What reads it next (zod, JSON.stringify) recurses: a body nested past any request's depth is refused here.
  if (nestsDeeperThan(body, 16)) throw new BadRequest('the request body nests deeper than any request does');
  return body as Record<string, unknown>;
}

function send(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

type ErrorBody = { message: string; type: string; code: number };

function errorBody(error: unknown): ErrorBody {
  const bad = error instanceof BadRequest;
  return {
    message: error instanceof Error ? error.message : String(error),
    type: bad ? 'BadRequestError' : 'InternalServerError',
    code: bad ? 400 : 500,
  };
}

export function createOpenAiServer(backend: OnnxBackend, options: ServeOptions): Server {
  const worker = new ModelWorker(backend, options.maxBatch ?? 16, options.batchWindowMs ?? 2);
  const model = new ServedModel(backend, worker, options.model);
  const window = backend.window;

  /**
   * A completion or chat answer: one JSON body, or (`stream`) events; its input was checked
   * before. A client that goes away before the answer stops its rows, streamed or not.
   */
  async function answer(
    res: ServerResponse,
    stream: boolean | null | undefined,
    whole: (signal: AbortSignal) => Promise<unknown>,
    streamed: (events: EventStream) => Promise<void>,
  ) {
    if (!stream) {
      const gone = clientGone(res);
      try {
        return send(res, 200, await whole(gone));
      } catch (error) {
        if (!gone.aborted) throw error;
        worker.stats.cancelled_requests++;
        return;
      }
    }
    const events = new EventStream(res);
    try {
      await streamed(events);
    } catch (error) {
      // A client that went away needs no answer (its rows were stopped); anything else ends the stream with the error.
      if (events.signal.aborted) worker.stats.cancelled_requests++;
      else events.end(errorBody(error));
    }
  }

  return createServer((req, res) => {
    void (async () => {
      try {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method === 'GET' && path === '/health') return send(res, 200, { status: 'ok', ...worker.stats });
        if (req.method === 'GET' && path === '/v1/models') {
          return send(res, 200, {
            object: 'list',
            data: [{ id: options.model, object: 'model', created: 0, owned_by: 'probe', root: options.model, max_model_len: window }],
          });
        }
        if (req.method !== 'POST')
          return send(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'NotFoundError', code: 404 } });
        const body = await readBody(req);
        if (body.model !== undefined && body.model !== null && body.model !== options.model)
          throw new BadRequest(`the model "${String(body.model)}" does not exist; this server serves "${options.model}"`);
        if (path === '/tokenize') {
          const tokens = [...(body.add_special_tokens === true ? model.specials : []), ...backend.encode(String(body.prompt ?? ''))];
          // prefix_token_id (ours, not vLLM's): what stands for an empty context (BOS, else EOS) where the tokenizer adds no BOS.
          return send(res, 200, { tokens, count: tokens.length, max_model_len: window, prefix_token_id: backend.prefixId });
        }
        if (path === '/detokenize') {
          const tokens = body.tokens;
          if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0))
            throw new BadRequest('"tokens" must be a list of token ids');
          return send(res, 200, { prompt: backend.decode(tokens as number[]) });
        }
        if (path === '/v1/completions') {
          const request = checkRequest(CompletionRequest, body);
          const plan = planCompletion(model, request);
          return await answer(
            res,
            request.stream,
            (signal) => completion(model, plan, signal),
            (events) => streamCompletion(model, plan, events),
          );
        }
        if (path === '/v1/chat/completions') {
          const request = checkRequest(ChatRequest, body);
          const plan = planChat(model, request);
          return await answer(
            res,
            request.stream,
            (signal) => chat(model, plan, signal),
            (events) => streamChat(model, plan, events),
          );
        }
        return send(res, 404, { error: { message: `no route POST ${path}`, type: 'NotFoundError', code: 404 } });
      } catch (error) {
        const body = errorBody(error);
        send(res, body.code, { error: body });
      }
    })();
  });
}
