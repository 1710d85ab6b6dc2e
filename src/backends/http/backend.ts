/**
 * The completion backend for a checkpoint behind OpenAI-compatible servers (vLLM, SGLang,
 * TGI, llama.cpp, `probe serve`): `--ckpt http://host:8000/v1`, several replicas as
 * comma-separated URLs. Scoring sends token-id prompts (tokenised with `--tokenizer DIR`,
 * else the server's `/tokenize`) and checks that the server returned one log-prob per
 * prompt token; the boundary rule is the one the ONNX backend uses. Every answer is held to
 * what a model could produce for its request (answer-checks.ts); one that is not is refused
 * in a line naming the server that gave it and the item it was for, and nothing of it is
 * scored or cached.
 */
import { InputError, ProbeError } from '../../errors.ts';
import { BOS_PROBE_TEXT, bosHead, fitContext, prependedToken, type BosPolicy, type BosUse } from '../bos.ts';
import { splitContinuations } from '../boundary.ts';
import { readTokenizerDir } from '../checkpoint-dir.ts';
import { CheckpointTokenizer } from '../onnx/tokenizer.ts';
import { TokenSpelling } from '../token-spelling.ts';
import type { CompletionBackend, Sample, SampleRequest, ScoreRequest, ScoreResult } from '../types.ts';
import { checkCompletions, RefusedAnswer, sampleProblem, scoreProblem, tokenIdFrom, type Vocabulary } from './answer-checks.ts';
import {
  checkCanScore,
  llamacppSampler,
  type ParsedSample,
  parseSamples,
  parseScore,
  parseTokenize,
  sampleCall,
  type SampleCallOptions,
  scoreCall,
  SERVER_LABEL,
  ServerContractError,
  type ScoreCall,
  type ServerKind,
  tokenizeCall,
} from './servers.ts';
import { onceUntilFailure } from '../../util/once-until-failure.ts';
import { DEFAULT_ENDPOINT_OPTIONS, Endpoint, EndpointPool, type EndpointOptions, ServerOutputError } from './transport.ts';

export interface HttpBackendOptions {
  /** Server kind; detected from `/v1/models` when omitted. */
  kind?: ServerKind;
  /** Model name to send; the server's first model when omitted. */
  model?: string;
  /** The checkpoint's tokenizer (a directory with tokenizer.json); else the server's `/tokenize`. */
  tokenizerDir?: string;
  /** Whether a BOS token goes before every context and prompt (bos.ts; default auto: what the checkpoint's tokenizer does). */
  bos?: BosPolicy;
  endpoint?: Partial<EndpointOptions>;
  cooldownMs?: number;
  signal?: AbortSignal;
  /** Runs when the backend closes, after its last request (an engine probe started for the run is stopped there). */
  onClose?: () => Promise<void>;
}

/** `http://host:8000/v1,http://host2:8000/v1` → server roots (`/v1` is added per call). */
export function serverRoots(spec: string): string[] {
  return spec
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean)
    .map((u) => u.replace(/\/+$/, '').replace(/\/v1$/, ''));
}

interface ModelCard {
  id?: string;
  owned_by?: string;
  max_model_len?: number;
  /** llama.cpp: its context per slot (`n_ctx`), the window a request has, and its vocabulary's size. */
  meta?: { n_ctx?: number; n_vocab?: number };
}

/** The vocabulary a server's token ids must come from: its local tokenizer's, else what llama.cpp's /v1/models says. */
function vocabularySize(tokenizer: CheckpointTokenizer | undefined, card: ModelCard | undefined): number | undefined {
  if (tokenizer) return tokenizer.vocabSize;
  const said = card?.meta?.n_vocab;
  return Number.isInteger(said) && (said as number) > 0 ? said : undefined;
}

/** Kinds whose sampling answers carry the generated token ids (so a sample's tokens are the server's, not the text re-encoded). */
const RETURNS_IDS = new Set<ServerKind>(['llamacpp', 'sglang', 'tgi']);

/** Where each kind's sampling answer says how many completions, how many tokens, and what text (what a refusal names). */
const SAMPLE_FIELDS: Record<ServerKind, { n: string; budget: string; text: string }> = {
  openai: { n: 'n', budget: 'max_tokens', text: 'choices.text' },
  vllm: { n: 'n', budget: 'max_tokens', text: 'choices.text' },
  sglang: { n: 'n', budget: 'max_new_tokens', text: 'text' },
  tgi: { n: 'n', budget: 'max_new_tokens', text: 'generated_text' },
  llamacpp: { n: 'n', budget: 'n_predict', text: 'content' },
};

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

/** The message inside a server's JSON error body, else the body itself (cut short). */
function serverMessage(body: string): string {
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } })?.error?.message;
    if (typeof message === 'string') return message;
  } catch {
    // not JSON: the body as it came
  }
  return body.slice(0, 300);
}

export class HttpBackend implements CompletionBackend {
  readonly id: string;
  readonly engine: string;
  /** The BOS policy resolved: from --tokenizer at once, else from the server's /tokenize on first use. */
  private readonly bosUse: () => Promise<BosUse>;
  /** TGI's /tokenize always adds its specials: what it answers for "" (taken off every answer). */
  private tgiSpecials: Promise<number[]> | undefined;
  /** llama.cpp's parallel slots (`/props` `total_slots`): the most samples one request may ask for. */
  private readonly slots = onceUntilFailure(() => this.serverSlots());
  /** The local tokenizer's spelling of texts, built on the first completion checked. */
  private spelling: TokenSpelling | undefined | null = null;

  private constructor(
    private readonly pool: EndpointPool,
    readonly kind: ServerKind,
    readonly model: string,
    private readonly tokenizer: CheckpointTokenizer | undefined,
    private readonly maxModelLen: number | undefined,
    private readonly signal: AbortSignal | undefined,
    private readonly bosPolicy: BosPolicy,
    private readonly onClose: (() => Promise<void>) | undefined,
    /** Token ids run below this (undefined: nothing says how far). */
    private readonly vocabSize: number | undefined,
  ) {
    this.id = `http:${kind}:${model}@${pool.urls.join(',')}`;
    this.engine = `${SERVER_LABEL[kind]} at ${pool.urls.join(', ')}${onClose ? ' (started by probe for the run)' : ''}`;
    const local = tokenizer ? Promise.resolve(tokenizer.bos(bosPolicy)) : undefined;
    this.bosUse = local ? () => local : onceUntilFailure(() => this.serverBos());
  }

  static async open(spec: string, options: HttpBackendOptions = {}): Promise<HttpBackend> {
    const endpointOptions = { ...DEFAULT_ENDPOINT_OPTIONS, ...options.endpoint };
    const pool = new EndpointPool(
      serverRoots(spec).map((root) => new Endpoint(root, endpointOptions)),
      { cooldownMs: options.cooldownMs ?? 30_000 },
    );
    const tokenizer = options.tokenizerDir ? new CheckpointTokenizer(readTokenizerDir(options.tokenizerDir)) : undefined;
    tokenizer?.bos(options.bos ?? 'auto'); // a policy the tokenizer cannot honour is bad input, before any request
    let cards: ModelCard[] = [];
    if (!options.kind || !options.model) {
      const answer = await pool.json<{ data?: ModelCard[] } | ModelCard>('/v1/models', undefined, options.signal);
      cards = 'data' in answer && Array.isArray(answer.data) ? answer.data : [answer as ModelCard];
    }
    const kind = options.kind ?? kindFromModels(cards);
    const model = options.model ?? cards[0]?.id ?? '';
    if (!model && kind !== 'sglang' && kind !== 'tgi') throw new ProbeError(`${spec}: /v1/models names no model; pass --model`);
    const window = cards[0]?.max_model_len ?? (kind === 'llamacpp' ? cards[0]?.meta?.n_ctx : undefined);
    return new HttpBackend(
      pool,
      kind,
      model,
      tokenizer,
      window,
      options.signal,
      options.bos ?? 'auto',
      options.onClose,
      vocabularySize(tokenizer, cards[0]),
    );
  }

  get concurrency(): number {
    return this.pool.capacity;
  }

  encode(text: string): number[] {
    if (!this.tokenizer) throw new ProbeError(`${this.id} tokenises on the server; use tokenize(), or give --tokenizer`);
    return this.tokenizer.encode(text);
  }

  /** Token ids of `text` without special tokens: the local tokenizer, else the server's `/tokenize`. */
  async tokenize(text: string): Promise<number[]> {
    if (this.tokenizer) return this.tokenizer.encode(text);
    const ids = await this.serverTokenize(text, false);
    if (this.kind !== 'tgi') return ids;
    const specials = await (this.tgiSpecials ??= this.serverTokenize('', true));
    return specials.every((t, i) => ids[i] === t) ? ids.slice(specials.length) : ids;
  }

  private async serverTokenize(text: string, addSpecial: boolean): Promise<number[]> {
    return this.ask(tokenizeCall(this.kind, this.model, text, addSpecial), (answer) => parseTokenize(this.kind, answer, this.vocabSize));
  }

  /** What the checks know of the checkpoint (the spelling is built once, on first use). */
  private vocabulary(): Vocabulary {
    if (this.spelling === null) this.spelling = this.tokenizer ? TokenSpelling.of(this.tokenizer) : undefined;
    return { size: this.vocabSize, spelling: this.spelling };
  }

  /** Sends `call` and reads its answer with `read`; a refusal names the replica that answered. */
  private async ask<T>(call: ScoreCall, read: (answer: unknown) => T): Promise<T> {
    const { answer, url } = await this.pool.answer(call.path, call.body, this.signal);
    try {
      return read(answer);
    } catch (error) {
      if (error instanceof RefusedAnswer && error.url === undefined) throw error.from(url);
      throw error;
    }
  }

  /** The BOS policy as resolved for this checkpoint; asked of the server once (a failed attempt is tried again). */
  bos(): Promise<BosUse> {
    return this.bosUse();
  }

  /**
   * The policy resolved from what the server's tokenizer does: `/tokenize` with and without
   * special tokens (TGI's always adds them: what it adds to ""). TGI takes text and adds its
   * tokenizer's specials itself, so a policy it cannot honour is refused here.
   */
  private async serverBos(): Promise<BosUse> {
    const policy = this.bosPolicy;
    const adds =
      this.kind === 'tgi'
        ? (await (this.tgiSpecials ??= this.serverTokenize('', true)))[0]
        : prependedToken(await this.serverTokenize(BOS_PROBE_TEXT, true), await this.serverTokenize(BOS_PROBE_TEXT, false));
    const where = { file: '--bos' };
    if (this.kind === 'tgi' && policy === 'never' && adds !== undefined) {
      throw new InputError(
        where,
        `--bos never: TGI at ${this.pool.urls.join(',')} tokenises the text itself and its tokenizer puts token ${adds} first, which TGI cannot be told to leave out; use --bos auto, or serve the checkpoint with vLLM, SGLang or probe serve`,
      );
    }
    if (policy === 'never') return { policy, id: null, source: '--bos never' };
    if (policy === 'always') {
      if (adds === undefined) {
        throw new InputError(
          where,
          this.kind === 'tgi'
            ? `--bos always: TGI at ${this.pool.urls.join(',')} tokenises the text itself and its tokenizer adds no BOS; use --bos never/auto, or serve the checkpoint with vLLM, SGLang or probe serve`
            : `--bos always: the server's /tokenize adds no BOS with add_special_tokens, so its BOS id is unknown; give --tokenizer DIR (the checkpoint's tokenizer_config.json names it)`,
        );
      }
      return { policy, id: adds, source: "--bos always (the BOS the server's tokenizer adds)" };
    }
    return adds === undefined
      ? { policy, id: null, source: "the server's tokenizer adds none (/tokenize with add_special_tokens)" }
      : { policy, id: adds, source: "the server's tokenizer prepends it (/tokenize with add_special_tokens)" };
  }

  /**
   * What stands for an empty context: BOS (or EOS) of the local tokenizer, else the server's
   * special tokens for "" (else the `prefix_token_id` that probe serve's /tokenize adds).
   */
  private async prefixIds(): Promise<number[]> {
    if (this.tokenizer) return [this.tokenizer.prefixId];
    const { ids, prefix } = await this.ask(tokenizeCall(this.kind, this.model, '', true), (answer) => ({
      ids: parseTokenize(this.kind, answer, this.vocabSize),
      prefix: (answer as { prefix_token_id?: unknown } | null)?.prefix_token_id,
    }));
    if (ids.length === 0 && prefix !== undefined && prefix !== null)
      return [tokenIdFrom(prefix, this.vocabSize, 'prefix_token_id', 'the prefix token')];
    if (ids.length === 0) throw new ProbeError(`${this.id}: an empty context needs a BOS token; the server adds none, so give --tokenizer`);
    return ids;
  }

  async score(requests: ScoreRequest[]): Promise<ScoreResult[][]> {
    return this.named(
      undefined,
      (async () => {
        checkCanScore(this.kind);
        return Promise.all(requests.map((r) => this.named(r.label, this.scoreOne(r))));
      })(),
    );
  }

  /**
   * A server that breaks the contract is bad input: exit 2, naming the server and the field.
   * An answer refused by the checks names the replica that gave it and what it was for.
   */
  private async named<T>(label: string | undefined, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (error instanceof RefusedAnswer)
        throw new InputError(
          { file: error.url ?? this.pool.urls.join(','), field: error.field },
          `the answer${label ? ` for ${label}` : ''} is refused (no model produces it): ${error.message}`,
          { cause: error },
        );
      if (error instanceof ServerContractError)
        throw new InputError({ file: this.pool.urls.join(','), field: error.field }, error.message, { cause: error });
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
    const bos = await this.bos();
    const head = bosHead(bos);
    const prefix = head.length === 0 && pairs.some((p) => p.contextTokens.length === 0) ? await this.prefixIds() : [];
    return Promise.all(
      pairs.map(async (pair) => {
        const room = (this.maxModelLen ?? Infinity) - 1 - pair.continuationTokens.length;
        if (room < 1)
          throw new ProbeError(
            `a continuation of ${pair.continuationTokens.length} tokens does not fit the ${this.maxModelLen}-token window of ${this.id}`,
          );
        // BOS stays first when the context is cut (bos.ts); token-id prompts carry it, TGI adds its own.
        const { ids: context, truncated } = fitContext(pair.contextTokens, head, prefix, room);
        const sent = [...(this.kind === 'tgi' ? context.slice(head.length) : context), ...pair.continuationTokens];
        const call = scoreCall(
          this.kind,
          this.model,
          sent,
          this.tokenizer ? this.tokenizer.decode(sent) : pair.context + pair.continuation,
        );
        const scored = await this.ask(call, (answer) => parseScore(this.kind, answer, sent, this.vocabSize));
        if (this.kind === 'tgi') this.checkTgiBos(scored.prepended, bos);
        const at = sent.length - pair.continuationTokens.length;
        const tokenLogprobs = scored.logprobs.slice(at).map((v, i) => {
          if (v === null) throw new ProbeError(`${this.id} returned no log-prob for continuation token ${i}`);
          return v;
        });
        return {
          tokenLogprobs,
          tokens: pair.continuationTokens,
          bytes: utf8.encode(pair.continuation).length,
          greedy: scored.greedy.slice(at).every((g) => g === true),
          truncated,
        };
      }),
    );
  }

  /** TGI adds its tokenizer's specials itself: what it put first must be the BOS the policy asks for. */
  private checkTgiBos(prepended: number | undefined, bos: BosUse): void {
    if (prepended === (bos.id ?? undefined)) return;
    throw new InputError(
      { file: '--bos', field: 'details.prefill' },
      prepended === undefined
        ? `--bos ${bos.policy} resolved to BOS ${bos.id} (${bos.source}), but TGI at ${this.pool.urls.join(',')} put no BOS before the prompt, and it takes text, so it cannot be given one; use --bos never, or serve the checkpoint with vLLM, SGLang or probe serve`
        : `--bos ${bos.policy} resolved to ${bos.id === null ? 'no BOS' : `BOS ${bos.id}`} (${bos.source}), but TGI at ${this.pool.urls.join(',')} put token ${prepended} before the prompt and cannot be told not to; use --bos auto or always, or serve the checkpoint with vLLM, SGLang or probe serve`,
    );
  }

  async sample(requests: SampleRequest[]): Promise<Sample[][]> {
    return Promise.all(requests.map((r) => this.named(r.label, this.sampleOne(r))));
  }

  private async sampleOne(request: SampleRequest): Promise<Sample[]> {
    const tokens = await this.tokenize(request.prompt);
    const head = bosHead(await this.bos());
    const prefix = tokens.length === 0 && head.length === 0 ? await this.prefixIds() : [];
    const room = (this.maxModelLen ?? Infinity) - request.maxTokens;
    if (room < 1)
      throw new ProbeError(
        `maxTokens ${request.maxTokens} leaves no room for a prompt in the ${this.maxModelLen}-token window of ${this.id}`,
      );
    const { ids: prompt, truncated } = fitContext(tokens, head, prefix, room);
    // TGI takes text and adds its own specials: the text is the prompt's without the BOS.
    const text = this.tokenizer ? this.tokenizer.decode(prompt.slice(head.length)) : request.prompt;
    // TGI has no n: one request per sample; llama.cpp refuses an n above its slot count. Either
    // way the samples are asked for in parts, part by part seeded seed + offset, as vLLM and
    // llama.cpp seed the samples of one request (seed + i).
    const perRequest = this.kind === 'tgi' ? 1 : this.kind === 'llamacpp' ? Math.min(request.n, await this.slots()) : request.n;
    const parts: Array<{ offset: number; n: number }> = [];
    for (let offset = 0; offset < request.n; offset += perRequest) parts.push({ offset, n: Math.min(perRequest, request.n - offset) });
    const parsed = (await Promise.all(parts.map((part) => this.samplePart({ ...request, prompt: text, promptIds: prompt }, part)))).flat();
    if (parsed.length !== request.n) throw new ProbeError(`${this.id} returned ${parsed.length} samples for n = ${request.n}`);
    return parsed.map((p) => {
      // The ids the server sampled where it says them (llama.cpp); else the text re-encoded, or only their count.
      const tokens = p.ids ?? (this.tokenizer ? this.tokenizer.encode(p.text) : new Array<number>(p.tokens ?? 0).fill(-1));
      return {
        text: p.text,
        tokens,
        logprob: p.logprob ?? NaN,
        finishReason: p.finishReason,
        ...(p.stop ? { stop: p.stop } : {}),
        ...(p.error !== undefined ? { error: p.error } : {}),
        truncated,
      };
    });
  }

  /**
   * Samples `part.n` of a request from `part.offset` on. A server that cannot return what it
   * generated (llama.cpp on bytes that are not valid UTF-8: `ServerOutputError`) fails the
   * whole request the same way on every try, so the part is asked for one sample at a time;
   * a sample that still cannot be had is kept as an `error` sample — a failure that says why —
   * and the others are kept as they are.
   */
  private async samplePart(o: SampleCallOptions, part: { offset: number; n: number }): Promise<ParsedSample[]> {
    const call = sampleCall(this.kind, this.model, { ...o, n: part.n, seed: o.seed + part.offset });
    try {
      return await this.ask(call, (answer) => {
        const parsed = parseSamples(this.kind, answer, o.stop, this.vocabSize);
        checkCompletions(parsed, { ...o, n: part.n }, this.vocabulary(), SAMPLE_FIELDS[this.kind]);
        return parsed;
      });
    } catch (error) {
      if (!(error instanceof ServerOutputError)) throw error;
      if (part.n > 1) {
        const singles = Array.from({ length: part.n }, (_, i) => this.samplePart(o, { offset: part.offset + i, n: 1 }));
        return (await Promise.all(singles)).flat();
      }
      return [
        {
          text: '',
          finishReason: 'error',
          error: `${this.kind} at ${error.url} generated sample ${part.offset} (seed ${o.seed + part.offset}) but could not return it: ${serverMessage(error.body)}`,
          tokens: 0,
          logprob: null,
        },
      ];
    }
  }

  private async serverSlots(): Promise<number> {
    const slots = (await this.pool.json<{ total_slots?: unknown }>('/props', undefined, this.signal))?.total_slots;
    if (!Number.isInteger(slots) || (slots as number) < 1)
      throw new ServerContractError(`server kind llamacpp: /props has no total_slots (got ${JSON.stringify(slots)})`, 'total_slots');
    return slots as number;
  }

  /** The distribution a request is drawn from on this server: what is sent, and what the server's own sampler adds where known. */
  async samplerSettings(o: Pick<SampleRequest, 'temperature' | 'topP' | 'topK'>): Promise<Record<string, unknown>> {
    if (this.kind === 'llamacpp') return { engine: 'llama.cpp /completion', ...llamacppSampler(o) };
    return {
      engine: `${this.kind} (the server's own sampler)`,
      temperature: o.temperature,
      top_p: o.topP,
      top_k: o.topK ?? 'off (not sent)',
    };
  }

  /** A cached score answer against this checkpoint's vocabulary (types.ts): what a fresh one is held to. */
  scoreAnswerProblem(_request: ScoreRequest, answer: ScoreResult[]): string | undefined {
    for (const [i, result] of answer.entries()) {
      const problem = scoreProblem(result, this.vocabulary());
      if (problem) return `result ${i}: ${problem}`;
    }
    return undefined;
  }

  /** A cached sampling answer against the request's budget and stops and this checkpoint's vocabulary and spelling. */
  sampleAnswerProblem(request: SampleRequest, answer: Sample[]): string | undefined {
    // A sample's tokens are the server's where it returns ids, or where there is no tokenizer to re-encode the text.
    const serverCounted = RETURNS_IDS.has(this.kind) || !this.tokenizer;
    for (const [i, sample] of answer.entries()) {
      const problem = sampleProblem(request, sample, this.vocabulary(), serverCounted);
      if (problem) return `sample ${i}: ${problem}`;
    }
    return undefined;
  }

  async close(): Promise<void> {
    await this.onClose?.();
  }
}
