/**
 * An ONNX checkpoint served as an OpenAI-compatible server (`probe serve`): load a model
 * once, point many probe processes at it. It speaks the subset the HTTP backend (and
 * vLLM clients) use: `/v1/models`, `/v1/completions` (token-id or text prompts; `echo`
 * with `logprobs` returns one log-prob per prompt token, the first null; sampling with
 * n, seed, temperature, top_p, top_k, max_tokens, stop, and vLLM's `stop_reason`),
 * `/tokenize`, `/detokenize`, `/health`. Errors use vLLM's `{"error": {...}}` shape.
 *
 * The model runs one job at a time (onnxruntime holds the thread while it runs); scoring
 * requests that wait together are batched into one forward pass (`ModelWorker`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { bosHead } from '../backends/bos.ts';
import type { OnnxBackend } from '../backends/onnx/backend.ts';
import type { Sample, ScoreResult } from '../backends/types.ts';

class BadRequest extends Error {}

interface CompletionBody {
  model?: string;
  prompt?: unknown;
  echo?: boolean;
  logprobs?: number | null;
  max_tokens?: number | null;
  n?: number;
  seed?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop?: string | string[] | null;
}

export interface ServeOptions {
  /** The model name `/v1/models` reports and requests may name. */
  model: string;
  /** Scoring requests run together at most (default 16). */
  maxBatch?: number;
  /** How long the model waits for more requests before a turn, in ms (default 2). */
  batchWindowMs?: number;
}

/**
 * The model runs one job at a time, in arrival order. Scoring jobs (echo, one greedy
 * token) that are waiting together run as one batched forward pass: while the model is
 * busy, requests pile up, and the next turn takes every waiting scoring job at once.
 */
class ModelWorker {
  private readonly waiting: Array<
    | { kind: 'score'; ids: number[]; done: (r: ScoreResult) => void; fail: (e: unknown) => void }
    | { kind: 'other'; job: () => Promise<void> }
  > = [];
  private busy = false;
  readonly stats = { batches: 0, batched_requests: 0, largest_batch: 0 };

  constructor(
    private readonly backend: OnnxBackend,
    private readonly maxBatch: number,
    private readonly windowMs: number,
  ) {}

  score(ids: number[]): Promise<ScoreResult> {
    return new Promise((done, fail) => {
      this.waiting.push({ kind: 'score', ids, done, fail });
      this.kick();
    });
  }

  run<T>(job: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ kind: 'other', job: () => job().then(resolve, reject) });
      this.kick();
    });
  }

  private kick(): void {
    if (this.busy) return;
    this.busy = true;
    // A short window lets requests that arrive together share a batch.
    setTimeout(() => void this.drain(), this.windowMs);
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const first = this.waiting[0]!;
      if (first.kind === 'other') {
        this.waiting.shift();
        await first.job();
        continue;
      }
      // Rows are padded to the longest: only prompts of similar length (within 25%) share a batch.
      const batch = [];
      const lead = first.ids.length;
      for (let i = 0; i < this.waiting.length && batch.length < this.maxBatch; ) {
        const job = this.waiting[i]!;
        if (job.kind === 'score' && job.ids.length <= lead * 1.25 && job.ids.length * 1.25 >= lead)
          batch.push(...(this.waiting.splice(i, 1) as Array<Extract<typeof job, { kind: 'score' }>>));
        else i++;
      }
      this.stats.batches++;
      this.stats.batched_requests += batch.length;
      this.stats.largest_batch = Math.max(this.stats.largest_batch, batch.length);
      try {
        const results = await this.backend.promptLogprobsBatch(batch.map((j) => j.ids));
        batch.forEach((j, k) => j.done(results[k]!));
      } catch (error) {
        batch.forEach((j) => j.fail(error));
      }
    }
    this.busy = false;
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequest('the request body is not JSON');
  }
}

function send(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function createOpenAiServer(backend: OnnxBackend, options: ServeOptions): Server {
  const worker = new ModelWorker(backend, options.maxBatch ?? 16, options.batchWindowMs ?? 2);
  const window = backend.window;
  // Echo answers name every prompt token as text: decode each id once.
  const pieces = new Map<number, string>();
  const piece = (id: number): string => {
    let text = pieces.get(id);
    if (text === undefined) pieces.set(id, (text = backend.decode([id])));
    return text;
  };

  // The tokenizer's own special tokens, as vLLM adds them: a text prompt and /tokenize with
  // add_special_tokens get the BOS where the tokenizer asks for one (bos.ts, auto); token-id
  // prompts are taken as they are (the client put any BOS there).
  const specials = bosHead(backend.bosUse);
  const promptIds = (prompt: unknown): number[] => {
    if (typeof prompt === 'string') return [...specials, ...backend.encode(prompt)];
    if (Array.isArray(prompt) && prompt.every((t) => Number.isInteger(t) && t >= 0)) return prompt as number[];
    throw new BadRequest('"prompt" must be a string or a list of token ids (one prompt per request)');
  };

  const completions = async (body: CompletionBody) => {
    const ids = promptIds(body.prompt);
    if (ids.length === 0) throw new BadRequest('"prompt" is empty');
    const n = body.n ?? 1;
    const maxTokens = body.max_tokens ?? 16;
    if (!Number.isInteger(n) || n < 1) throw new BadRequest('"n" must be a positive integer');
    if (!Number.isInteger(maxTokens) || maxTokens < 0 || (maxTokens === 0 && !body.echo))
      throw new BadRequest('"max_tokens" must be at least 1 (0 only with echo)');
    if (ids.length + maxTokens > window)
      throw new BadRequest(
        `this model's maximum context length is ${window} tokens; the prompt has ${ids.length} and max_tokens is ${maxTokens}`,
      );
    const stop = body.stop === undefined || body.stop === null ? [] : Array.isArray(body.stop) ? body.stop : [body.stop];
    const wantLogprobs = body.logprobs !== undefined && body.logprobs !== null;
    const temperature = body.temperature ?? 1;
    let echoed: ScoreResult | undefined;
    let samples: Array<Sample | null>;
    if (body.echo && maxTokens <= 1 && temperature === 0 && n === 1 && stop.length === 0) {
      // How scoring clients ask (echo, one greedy token): one pass. A placeholder token after
      // the prompt makes the pass compute the next-token row too; its argmax is the greedy token.
      const scored = await worker.score([...ids, 0]);
      echoed = {
        ...scored,
        tokenLogprobs: scored.tokenLogprobs.slice(0, -1),
        tokens: scored.tokens.slice(0, -1),
        argmax: scored.argmax?.slice(0, -1),
      };
      const next = scored.argmax!.at(-1)!;
      samples = [
        maxTokens === 0
          ? null
          : {
              text: backend.decode([next.token]),
              tokens: [next.token],
              logprob: next.logprob,
              tokenLogprobs: [next.logprob],
              finishReason: 'length',
              truncated: false,
            },
      ];
    } else {
      samples =
        maxTokens === 0
          ? Array.from({ length: n }, () => null)
          : await worker.run(() =>
              backend.sampleIds(ids, {
                prompt: '',
                n,
                temperature,
                topP: body.top_p ?? 1,
                ...(body.top_k ? { topK: body.top_k } : {}),
                maxTokens,
                stop,
                seed: body.seed ?? 0,
              }),
            );
      if (body.echo) echoed = await worker.score(ids);
    }
    const promptText = body.echo ? backend.decode(ids) : '';
    const choices = samples.map((sample, index) => {
      const genTokens = sample?.tokens ?? [];
      const genLogprobs = sample?.tokenLogprobs ?? [];
      let logprobs = null;
      if (wantLogprobs) {
        const tokens: number[] = [...(echoed ? ids : []), ...genTokens];
        const tokenLogprobs: Array<number | null> = [...(echoed ? [null, ...echoed.tokenLogprobs] : []), ...genLogprobs];
        const top: Array<Record<string, number> | null> = [
          ...(echoed ? [null, ...echoed.tokenLogprobs.map((lp, i) => topEntry(piece, ids[i + 1]!, lp, echoed!.argmax?.[i]))] : []),
          ...genTokens.map((t, i) => ({ [piece(t)]: genLogprobs[i]! })),
        ];
        const strings = tokens.map(piece);
        const offsets: number[] = [];
        strings.reduce((at, s) => {
          offsets.push(at);
          return at + s.length;
        }, 0);
        logprobs = { tokens: strings, token_logprobs: tokenLogprobs, top_logprobs: top, text_offset: offsets };
      }
      return {
        index,
        text: promptText + (sample?.text ?? ''),
        logprobs,
        finish_reason: sample === null || sample.finishReason === 'length' ? 'length' : 'stop',
        stop_reason: sample?.stop ?? null,
      };
    });
    return {
      id: `cmpl-${Date.now().toString(36)}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: options.model,
      choices,
      usage: {
        prompt_tokens: ids.length,
        completion_tokens: samples.reduce((a, s) => a + (s?.tokens.length ?? 0), 0),
        total_tokens: ids.length + samples.reduce((a, s) => a + (s?.tokens.length ?? 0), 0),
      },
    };
  };

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
        const body = (await readBody(req)) as Record<string, unknown>;
        if (body.model !== undefined && body.model !== options.model)
          throw new BadRequest(`the model "${String(body.model)}" does not exist; this server serves "${options.model}"`);
        if (path === '/tokenize') {
          const tokens = [...(body.add_special_tokens === true ? specials : []), ...backend.encode(String(body.prompt ?? ''))];
          // prefix_token_id (ours, not vLLM's): what stands for an empty context (BOS, else EOS) where the tokenizer adds no BOS.
          return send(res, 200, { tokens, count: tokens.length, max_model_len: window, prefix_token_id: backend.prefixId });
        }
        if (path === '/detokenize') return send(res, 200, { prompt: backend.decode(promptIds(body.tokens)) });
        if (path === '/v1/completions') return send(res, 200, await completions(body as CompletionBody));
        return send(res, 404, { error: { message: `no route POST ${path}`, type: 'NotFoundError', code: 404 } });
      } catch (error) {
        const bad = error instanceof BadRequest;
        send(res, bad ? 400 : 500, {
          error: {
            message: error instanceof Error ? error.message : String(error),
            type: bad ? 'BadRequestError' : 'InternalServerError',
            code: bad ? 400 : 500,
          },
        });
      }
    })();
  });
}

/** `top_logprobs` with logprobs 1: the actual token and the most likely one. */
function topEntry(
  piece: (id: number) => string,
  token: number,
  logprob: number,
  argmax: { token: number; logprob: number } | undefined,
): Record<string, number> {
  const entry: Record<string, number> = {};
  if (argmax) entry[piece(argmax.token)] = argmax.logprob;
  entry[piece(token)] = logprob;
  return entry;
}
