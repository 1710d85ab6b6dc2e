/**
 * The completion backend for a checkpoint behind OpenAI-compatible servers (vLLM, SGLang,
 * TGI, llama.cpp, `probe serve`): `--ckpt http://host:8000/v1`, several replicas as
 * comma-separated URLs. Scoring sends token-id prompts (tokenised with `--tokenizer DIR`,
 * else the server's `/tokenize`) and checks that the server returned one log-prob per
 * prompt token; the boundary rule is the one the ONNX backend uses.
 */
import { InputError, ProbeError } from '../../errors.ts';
import { splitContinuations } from '../boundary.ts';
import { readTokenizerDir } from '../onnx/checkpoint.ts';
import { CheckpointTokenizer } from '../onnx/tokenizer.ts';
import type { CompletionBackend, Sample, SampleRequest, ScoreRequest, ScoreResult } from '../types.ts';
import { checkCanScore, parseSamples, parseScore, parseTokenize, sampleCall, scoreCall, ServerContractError, type ServerKind, tokenizeCall } from './servers.ts';
import { DEFAULT_ENDPOINT_OPTIONS, Endpoint, EndpointPool, type EndpointOptions } from './transport.ts';

export interface HttpBackendOptions {
  /** Server kind; detected from `/v1/models` when omitted. */
  kind?: ServerKind;
  /** Model name to send; the server's first model when omitted. */
  model?: string;
  /** The checkpoint's tokenizer (a directory with tokenizer.json); else the server's `/tokenize`. */
  tokenizerDir?: string;
  endpoint?: Partial<EndpointOptions>;
  cooldownMs?: number;
  signal?: AbortSignal;
}

/** `http://host:8000/v1,http://host2:8000/v1` → server roots (`/v1` is added per call). */
export function serverRoots(spec: string): string[] {
  return spec.split(',').map((u) => u.trim()).filter(Boolean).map((u) => u.replace(/\/+$/, '').replace(/\/v1$/, ''));
}

interface ModelCard { id?: string; owned_by?: string; max_model_len?: number }

/** The server kind from what `/v1/models` says about its models' owner. */
export function kindFromModels(cards: ModelCard[]): ServerKind {
  const owner = (cards[0]?.owned_by ?? '').toLowerCase();
  if (owner === 'vllm') return 'vllm';
  if (owner === 'sglang') return 'sglang';
  if (owner.includes('llama')) return 'llamacpp';
  if (owner === 'tgi' || owner.includes('text-generation-inference')) return 'tgi';
  return 'openai';
}

const utf8 = new TextEncoder();

export class HttpBackend implements CompletionBackend {
  readonly id: string;

  private constructor(
    private readonly pool: EndpointPool,
    readonly kind: ServerKind,
    readonly model: string,
    private readonly tokenizer: CheckpointTokenizer | undefined,
    private readonly maxModelLen: number | undefined,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.id = `http:${kind}:${model}@${pool.urls.join(',')}`;
  }

  static async open(spec: string, options: HttpBackendOptions = {}): Promise<HttpBackend> {
    const endpointOptions = { ...DEFAULT_ENDPOINT_OPTIONS, ...options.endpoint };
    const pool = new EndpointPool(serverRoots(spec).map((root) => new Endpoint(root, endpointOptions)), { cooldownMs: options.cooldownMs ?? 30_000 });
    const tokenizer = options.tokenizerDir ? new CheckpointTokenizer(readTokenizerDir(options.tokenizerDir)) : undefined;
    let cards: ModelCard[] = [];
    if (!options.kind || !options.model) {
      const answer = await pool.json<{ data?: ModelCard[] } | ModelCard>('/v1/models', undefined, options.signal);
      cards = 'data' in answer && Array.isArray(answer.data) ? answer.data : [answer as ModelCard];
    }
    const kind = options.kind ?? kindFromModels(cards);
    const model = options.model ?? cards[0]?.id ?? '';
    if (!model && kind !== 'sglang' && kind !== 'tgi') throw new ProbeError(`${spec}: /v1/models names no model; pass --model`);
    return new HttpBackend(pool, kind, model, tokenizer, cards[0]?.max_model_len, options.signal);
  }

  encode(text: string): number[] {
    if (!this.tokenizer) throw new ProbeError(`${this.id} tokenises on the server; use tokenize(), or give --tokenizer`);
    return this.tokenizer.encode(text);
  }

  /** Token ids of `text` without special tokens: the local tokenizer, else the server's `/tokenize`. */
  async tokenize(text: string): Promise<number[]> {
    if (this.tokenizer) return this.tokenizer.encode(text);
    const call = tokenizeCall(this.kind, this.model, text);
    return parseTokenize(this.kind, await this.pool.json(call.path, call.body, this.signal));
  }

  /** What stands for an empty context: BOS (or EOS) of the local tokenizer, else the server's special tokens for "". */
  private async prefixIds(): Promise<number[]> {
    if (this.tokenizer) return [this.tokenizer.prefixId];
    const call = tokenizeCall(this.kind, this.model, '', true);
    const ids = parseTokenize(this.kind, await this.pool.json(call.path, call.body, this.signal));
    if (ids.length === 0) throw new ProbeError(`${this.id}: an empty context needs a BOS token; the server adds none, so give --tokenizer`);
    return ids;
  }

  async score(requests: ScoreRequest[]): Promise<ScoreResult[][]> {
    return this.named((async () => {
      checkCanScore(this.kind);
      return Promise.all(requests.map((r) => this.scoreOne(r)));
    })());
  }

  /** A server that breaks the contract is bad input: exit 2, naming the server and the field. */
  private async named<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (error instanceof ServerContractError) throw new InputError({ file: this.pool.urls.join(','), field: error.field }, error.message, { cause: error });
      throw error;
    }
  }

  private async scoreOne(request: ScoreRequest): Promise<ScoreResult[]> {
    // The boundary rule on token ids fetched up front (the server tokeniser is async).
    const trimmed = request.context.replace(/\s+$/u, '');
    const moved = request.context.slice(trimmed.length);
    const texts = [trimmed, ...request.continuations.map((c) => trimmed + moved + c)];
    const encoded = new Map<string, number[]>();
    await Promise.all([...new Set(texts)].map(async (t) => encoded.set(t, await this.tokenize(t))));
    const pairs = splitContinuations(request.context, request.continuations, (t) => encoded.get(t)!, { anchor: false });
    const prefix = pairs.some((p) => p.contextTokens.length === 0) ? await this.prefixIds() : [];
    return Promise.all(pairs.map(async (pair) => {
      let context = pair.contextTokens.length === 0 ? prefix : pair.contextTokens;
      const room = (this.maxModelLen ?? Infinity) - 1 - pair.continuationTokens.length;
      if (room < 1) throw new ProbeError(`a continuation of ${pair.continuationTokens.length} tokens does not fit the ${this.maxModelLen}-token window of ${this.id}`);
      const truncated = context.length > room;
      if (truncated) context = context.slice(context.length - room);
      const ids = [...context, ...pair.continuationTokens];
      const call = scoreCall(this.kind, this.model, ids, this.tokenizer ? this.tokenizer.decode(ids) : pair.context + pair.continuation);
      const scored = parseScore(this.kind, await this.pool.json(call.path, call.body, this.signal), ids);
      const at = context.length;
      const tokenLogprobs = scored.logprobs.slice(at).map((v, i) => {
        if (v === null) throw new ProbeError(`${this.id} returned no log-prob for continuation token ${i}`);
        return v;
      });
      return { tokenLogprobs, tokens: pair.continuationTokens, bytes: utf8.encode(pair.continuation).length, greedy: scored.greedy.slice(at).every((g) => g === true), truncated };
    }));
  }

  async sample(requests: SampleRequest[]): Promise<Sample[][]> {
    return this.named(Promise.all(requests.map((r) => this.sampleOne(r))));
  }

  private async sampleOne(request: SampleRequest): Promise<Sample[]> {
    let prompt = await this.tokenize(request.prompt);
    if (prompt.length === 0) prompt = await this.prefixIds();
    const room = (this.maxModelLen ?? Infinity) - request.maxTokens;
    if (room < 1) throw new ProbeError(`maxTokens ${request.maxTokens} leaves no room for a prompt in the ${this.maxModelLen}-token window of ${this.id}`);
    const truncated = prompt.length > room;
    if (truncated) prompt = prompt.slice(prompt.length - room);
    const text = this.tokenizer ? this.tokenizer.decode(prompt) : request.prompt;
    // TGI has no n: one request per sample, seeded seed + i as vLLM seeds its children.
    const perRequest = this.kind === 'tgi' ? 1 : request.n;
    const calls = Array.from({ length: request.n / perRequest }, (_, i) => sampleCall(this.kind, this.model, { ...request, prompt: text, promptIds: prompt, n: perRequest, seed: request.seed + i }));
    const answers = await Promise.all(calls.map((c) => this.pool.json(c.path, c.body, this.signal)));
    const parsed = answers.flatMap((a) => parseSamples(this.kind, a, request.stop));
    if (parsed.length !== request.n) throw new ProbeError(`${this.id} returned ${parsed.length} samples for n = ${request.n}`);
    return parsed.map((p) => {
      const tokens = this.tokenizer ? this.tokenizer.encode(p.text) : new Array<number>(p.tokens ?? 0).fill(-1);
      return { text: p.text, tokens, logprob: p.logprob ?? NaN, finishReason: p.finishReason, ...(p.stop ? { stop: p.stop } : {}), truncated };
    });
  }

  async close(): Promise<void> {}
}
