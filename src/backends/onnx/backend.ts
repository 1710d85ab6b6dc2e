/**
 * The in-process ONNX completion backend: exact scoring and an owned sampling loop over
 * one checkpoint directory.
 *
 * Scoring feeds a shared context once (in chunks through the key/value cache when the
 * graph has one) and reuses that cache for every continuation, so only continuation
 * positions are turned into log-probabilities. Each chunk's rows are scored (in
 * onnxruntime, log-softmax.ts) as soon as the chunk comes back, and chunks are sized so
 * their logits (chunk × vocabulary) and attention weights stay within fixed budgets:
 * peak memory does not grow with context length × vocabulary.
 */
import { realpathSync } from 'node:fs';
import { relative } from 'node:path';
import { ProbeError } from '../../errors.ts';
import { bosHead, fitContext, type BosPolicy, type BosUse } from '../bos.ts';
import { encodeTail, splitContinuations, type SplitPair } from '../boundary.ts';
import type { CompletionBackend, Sample, SampleRequest, ScoreRequest, ScoreResult } from '../types.ts';
import { readCheckpointDir, type CheckpointFiles } from '../checkpoint-dir.ts';
import type { Dtype } from './dtype.ts';
import { checkLogitsWidth, checkSpecialsAreSpecial, checkSpecialTokens, tokenizerIdsOf } from './consistency.ts';
import { OnnxGraph, type KvCache } from './graph.ts';
import { LogSoftmaxSession, type RowScores } from './log-softmax.ts';
import { CheckpointTokenizer } from './tokenizer.ts';
import { BatchSampler } from './batch-sampler.ts';
import { SampleDraws, type SampleWatch } from './sample-draws.ts';
import { PromptCaches, type FedPrompt } from './prompt-caches.ts';
import { PrefixDecoder } from './prefix-decoder.ts';
import { onceUntilFailure } from '../../util/once-until-failure.ts';

export interface OnnxBackendOptions {
  /** Most tokens per forward pass when feeding a context through the cache (default 512). */
  chunkSize?: number;
  /** Override the checkpoint's window (max_position_embeddings), e.g. to test truncation. */
  window?: number;
  /** Whether a BOS token goes before every context and prompt (bos.ts; default auto: what the tokenizer does). */
  bos?: BosPolicy;
  /** Which of the directory's graphs to run (`onnx/model_fp16.onnx` …; default fp32, `onnx/model.onnx`). */
  dtype?: Dtype;
  /** Most sequences sampled in one forward pass (default: as many as keep a pass within 8 MiB of cache, at most 32; 1 samples one at a time, as before batching). */
  sampleRows?: number;
  /** Continue a sampling prompt from the cache of a recent prompt it extends (default true; bit-identical either way, prompt-caches.ts). */
  reusePrompts?: boolean;
  /**
   * How sampling steps run: 'auto' (default) through probe's shared-prefix decode graph
   * where the export is a recognised Llama one that agrees with its own graph
   * (prefix-decoder.ts), else through the checkpoint's graph; 'graph' always through the
   * checkpoint's graph (the path before the decode graph, for comparison). Default:
   * $PROBE_DECODE, else 'auto'.
   */
  decode?: DecodeChoice;
}

const DECODE_CHOICES = ['auto', 'graph'] as const;
type DecodeChoice = (typeof DECODE_CHOICES)[number];

/** $PROBE_DECODE (auto | graph): how every in-process checkpoint of this process samples, unless told. */
function decodeFromEnvironment(): DecodeChoice {
  const raw = process.env.PROBE_DECODE;
  if (raw === undefined || raw === '') return 'auto';
  if (!(DECODE_CHOICES as readonly string[]).includes(raw))
    throw new ProbeError(`PROBE_DECODE=${raw} is not one of ${DECODE_CHOICES.join(', ')}`, { exitCode: 2 });
  return raw as DecodeChoice;
}

const utf8 = new TextEncoder();
/**
 * Floats one forward pass may materialise per layer: each chunk token's logits row plus
 * its attention weights (one row per head over every key). 8M floats = 32 MiB: 512
 * tokens at an 8K vocabulary and 1K context, 220 at a 32K vocabulary, 64 (MIN_CHUNK) at
 * 152K. A budget on the sum, not on each, is what keeps peak memory flat as either grows.
 */
const CHUNK_BUDGET = 8 * 2 ** 20;
const MIN_CHUNK = 64;

export class OnnxBackend implements CompletionBackend {
  readonly id: string;
  readonly engine: string;
  readonly window: number;
  /** The BOS policy as resolved for this checkpoint's tokenizer. */
  readonly bosUse: BosUse;
  private readonly chunkSize: number;
  /** Batched sampling through the cache; absent for graphs without one. */
  private readonly sampler: BatchSampler | undefined;
  private readonly prompts: PromptCaches | undefined;
  /** The decode graph, opened at the first sample: the decoder, or why sampling steps through the checkpoint's graph. */
  private readonly decoder: () => Promise<PrefixDecoder | { reason: string }>;
  private decodePath: PrefixDecoder | { reason: string } | undefined;

  private constructor(
    readonly dir: string,
    files: CheckpointFiles,
    private readonly tokenizer: CheckpointTokenizer,
    private readonly graph: OnnxGraph,
    private readonly rows: LogSoftmaxSession,
    bosUse: BosUse,
    options: OnnxBackendOptions,
  ) {
    this.id = `onnx:${dir}`;
    this.engine =
      files.graph.kind === 'built'
        ? `probe in process (onnxruntime): ${files.graph.model.spec.family} graph built from ${relative(files.dir, files.modelPath)}`
        : `probe in process (onnxruntime): ${relative(files.dir, files.modelPath)}`;
    this.bosUse = bosUse;
    this.window = options.window ?? graph.window;
    this.chunkSize = options.chunkSize ?? 512;
    this.prompts = options.reusePrompts === false ? undefined : new PromptCaches();
    const opened =
      (options.decode ?? decodeFromEnvironment()) === 'graph' ? undefined : onceUntilFailure(() => PrefixDecoder.open(files, graph));
    this.decoder = async () => {
      this.decodePath = opened ? await opened() : { reason: "the export's own graph was asked for" };
      return this.decodePath;
    };
    this.sampler = graph.hasCache
      ? new BatchSampler(
          graph,
          tokenizer,
          this.window,
          (ids) => this.feedPrompt(ids),
          async () => {
            const path = await this.decoder();
            return path instanceof PrefixDecoder ? path : undefined;
          },
          options.sampleRows,
        )
      : undefined;
  }

  /** Opens a checkpoint directory; its tokenizer, config and graph are checked against each other before any work (consistency.ts). */
  static async open(dirArg: string, options: OnnxBackendOptions = {}): Promise<OnnxBackend> {
    const files = readCheckpointDir(dirArg, options.dtype);
    const ids = tokenizerIdsOf(files);
    checkSpecialTokens(files.dir, files.config, ids);
    const tokenizer = new CheckpointTokenizer(files);
    const bosUse = tokenizer.bos(options.bos ?? 'auto'); // a policy the tokenizer cannot honour is bad input, before the graph loads
    const graph = await OnnxGraph.load(files);
    try {
      checkLogitsWidth(files.dir, files.modelPath, files.config, ids, graph.vocab);
      checkSpecialsAreSpecial(files.dir, files.config, ids);
    } catch (error) {
      await graph.close();
      throw error;
    }
    const rows = await LogSoftmaxSession.create();
    return new OnnxBackend(realpathSync(files.dir), files, tokenizer, graph, rows, bosUse, options);
  }

  get hasCache(): boolean {
    return this.graph.hasCache;
  }

  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  /** The token that stands for an empty context (BOS, else EOS). */
  get prefixId(): number {
    return this.tokenizer.prefixId;
  }

  decode(ids: number[]): string {
    return this.tokenizer.decode(ids);
  }

  /** Token ids run from 0 to this (exclusive): the width of the graph's logits. */
  get vocabSize(): number {
    return this.graph.vocab;
  }

  isEos(id: number): boolean {
    return this.tokenizer.eosIds.has(id);
  }

  /** A token's exact bytes, where the tokenizer's decoder defines them (tokenizer.ts `bytesOf`). */
  bytesOf(id: number): Uint8Array | undefined {
    return this.tokenizer.bytesOf(id);
  }

  /** The checkpoint's chat template, where its tokenizer has one (a base model's has none). */
  get chatTemplate(): string | undefined {
    return this.tokenizer.chatTemplate;
  }

  renderChat(messages: Array<{ role: string; content: string }>): string {
    return this.tokenizer.renderChat(messages);
  }

  /**
   * In process: temperature, then top-k (off unless asked), then top-p, then one draw
   * (logits.ts); nothing else. `decode` says which graph runs the steps (the decode
   * graph is opened to say so, if no sample has opened it: a resumed run records what a
   * fresh one does).
   */
  async samplerSettings(o: Pick<SampleRequest, 'temperature' | 'topP' | 'topK'>): Promise<Record<string, unknown>> {
    const path = await this.decoder();
    return {
      engine: 'probe in process (onnxruntime)',
      decode: path instanceof PrefixDecoder ? 'shared-prefix decode graph' : `checkpoint graph (${path.reason})`,
      samplers: ['temperature', 'top_k', 'top_p'],
      temperature: o.temperature,
      top_k: o.topK ?? 0,
      top_p: o.topP,
      min_p: 0,
    };
  }

  async bos(): Promise<BosUse> {
    return this.bosUse;
  }

  async score(requests: ScoreRequest[]): Promise<ScoreResult[][]> {
    const results: ScoreResult[][] = [];
    for (const request of requests) results.push(await this.scoreOne(request));
    return results;
  }

  private async scoreOne(request: ScoreRequest): Promise<ScoreResult[]> {
    // Only the last window's worth of a context can be scored: a far longer one is tokenised from a tail (boundary.ts).
    const pairs = splitContinuations(request.context, request.continuations, (text) => this.tokenizer.encode(text), {
      keepTokens: this.window,
    });
    // Options share one context token array, except those split apart by a boundary merge.
    const groups = new Map<number[], number[]>();
    pairs.forEach((pair, i) => groups.set(pair.contextTokens, [...(groups.get(pair.contextTokens) ?? []), i]));
    const results: ScoreResult[] = new Array(pairs.length);
    for (const [contextTokens, members] of groups) {
      const scored = await this.scoreShared(
        contextTokens,
        members.map((i) => pairs[i]!),
        bosHead(this.bosUse),
      );
      members.forEach((i, k) => {
        results[i] = scored[k]!;
      });
    }
    return results;
  }

  /** Scores continuations of one context, feeding `head` (the BOS, or nothing) and the context once. */
  private async scoreShared(contextTokens: number[], pairs: SplitPair[], head: number[] = []): Promise<ScoreResult[]> {
    // Every option sees the same context: cut it so the longest continuation still fits.
    const longest = Math.max(...pairs.map((p) => p.continuationTokens.length));
    const room = this.window - Math.max(0, longest - 1);
    if (room < 1) {
      throw new ProbeError(`a continuation of ${longest} tokens does not fit the ${this.window}-token window of ${this.dir}`);
    }
    // BOS stays first when the context is cut; an empty context is the BOS, else the prefix token.
    const { ids: context, truncated } = fitContext(contextTokens, head, [this.tokenizer.prefixId], room);

    const results: ScoreResult[] = [];
    if (this.graph.hasCache) {
      const prefix = await this.feed(context, undefined);
      for (const pair of pairs) {
        results.push(await this.scoreAfterCache(pair.continuationTokens, prefix.cache!, prefix.lastRow, pair.continuation, truncated));
      }
    } else {
      for (const pair of pairs) {
        const tokens = pair.continuationTokens;
        const scores = new TokenScores();
        if (tokens.length > 0) {
          const { logits } = await this.graph.forward([...context, ...tokens.slice(0, -1)], undefined);
          scores.add(await this.rows.score(logits, context.length - 1, this.graph.vocab, tokens), tokens);
        }
        results.push(scores.result(tokens, pair.continuation, truncated));
      }
    }
    return results;
  }

  /**
   * Tokens for the next forward pass after `cached` tokens: a chunk's logits (chunk ×
   * vocabulary) and attention weights (heads × chunk × keys) stay within CHUNK_BUDGET, so
   * long contexts and large vocabularies run in smaller chunks instead of growing memory;
   * short ones at small vocabularies use the full chunk size.
   */
  private chunkAfter(cached: number): number {
    const perToken = this.graph.vocab + this.graph.attentionHeads * (cached + this.chunkSize);
    return Math.max(1, Math.min(this.chunkSize, Math.max(MIN_CHUNK, Math.floor(CHUNK_BUDGET / perToken))));
  }

  /** A sampling prompt's cache: continued from the longest head it shares with a recent prompt (prompt-caches.ts), else fed whole. */
  private async feedPrompt(ids: number[]): Promise<FedPrompt> {
    const known = this.prompts?.lookup(ids);
    if (known && 'exact' in known) return known.exact;
    const head = known?.head;
    const { cache, lastRow } = await this.feed(head ? ids.slice(head.length) : ids, head);
    const fed = { ids, cache: cache!, lastRow };
    this.prompts?.remember(fed);
    return fed;
  }

  /**
   * Feeds `ids` after `cache` in chunks; returns the new cache and the logits row of the
   * last position. No chunk is a single token unless `ids` is: a one-token pass rounds
   * differently from a longer one, and prompt caches (prompt-caches.ts) are only exact
   * when every position was computed in a pass of several tokens.
   */
  private async feed(ids: number[], cache: KvCache | undefined): Promise<{ cache: KvCache | undefined; lastRow: Float32Array }> {
    let lastRow: Float32Array = new Float32Array(0);
    for (let start = 0; start < ids.length; ) {
      let size = Math.min(this.chunkAfter(cache?.length ?? 0), ids.length - start);
      if (ids.length - start - size === 1 && size > 1) size--;
      const chunk = ids.slice(start, start + size);
      start += chunk.length;
      const out = await this.graph.forward(chunk, cache, 1, 'last');
      cache = out.cache;
      lastRow = out.logits;
    }
    return { cache, lastRow };
  }

  /** Scores `tokens` after `cache`, whose last logits row (`firstRow`) predicts the first; each chunk is scored as it comes back, so no chunk's logits outlive it. */
  private async scoreAfterCache(
    tokens: number[],
    cache: KvCache,
    firstRow: Float32Array,
    text: string,
    truncated: boolean,
  ): Promise<ScoreResult> {
    const vocab = this.graph.vocab;
    const scores = new TokenScores();
    scores.add(await this.rows.score(firstRow, 0, vocab, tokens.slice(0, 1)), tokens.slice(0, 1));
    let current: KvCache | undefined = cache;
    const inputs = tokens.slice(0, -1);
    for (let start = 0; start < inputs.length; ) {
      const chunk = inputs.slice(start, start + this.chunkAfter(current?.length ?? 0));
      const out = await this.graph.forward(chunk, current);
      current = out.cache;
      // Row i follows input start + i and predicts token start + i + 1.
      const targets = tokens.slice(start + 1, start + 1 + chunk.length);
      scores.add(await this.rows.score(out.logits, 0, vocab, targets), targets);
      start += chunk.length;
    }
    return scores.result(tokens, text, truncated);
  }

  /** Every request's samples advance together, with those of concurrent calls (batch-sampler.ts). */
  async sample(requests: SampleRequest[]): Promise<Sample[][]> {
    return Promise.all(requests.map((request) => this.sampleOne(request)));
  }

  /**
   * Log-probs of every token of a token-id prompt after the first (what a server's
   * `echo` + `logprobs` returns), fed through the cache as scoring does.
   */
  async promptLogprobs(ids: number[]): Promise<ScoreResult> {
    if (ids.length === 0) throw new ProbeError('an empty prompt has no log-probs');
    const [result] = await this.scoreShared(
      [ids[0]!],
      [{ context: '', continuation: this.tokenizer.decode(ids.slice(1)), contextTokens: [ids[0]!], continuationTokens: ids.slice(1) }],
    );
    return result!;
  }

  /**
   * `promptLogprobs` for several prompts in batched forward passes (what `probe serve`
   * does with concurrent scoring requests): rows padded on the right to the longest,
   * fed through the cache chunk by chunk, each row's log-probs read at its own positions.
   */
  async promptLogprobsBatch(prompts: number[][]): Promise<ScoreResult[]> {
    if (prompts.length === 1) return [await this.promptLogprobs(prompts[0]!)];
    if (prompts.some((p) => p.length === 0)) throw new ProbeError('an empty prompt has no log-probs');
    const batch = prompts.length;
    const vocab = this.graph.vocab;
    const longest = Math.max(...prompts.map((p) => p.length));
    if (longest > this.window)
      throw new ProbeError(`a prompt of ${longest} tokens does not fit the ${this.window}-token window of ${this.dir}`);
    // Row b, position t: the logits after token t of prompt b (predicting token t + 1), scored as each chunk comes back.
    const scores = prompts.map(() => new TokenScores());
    const padded = (b: number, t: number) => prompts[b]![t] ?? 0;
    let cache: KvCache | undefined;
    for (let start = 0; start < longest - 1; ) {
      const size = this.graph.hasCache ? Math.max(1, Math.floor(this.chunkAfter(cache?.length ?? 0) / batch)) : longest - 1;
      const chunk = Math.min(size, longest - 1 - start);
      const from = this.graph.hasCache ? start : 0;
      const width = start + chunk - from;
      const ids = new Array<number>(batch * width);
      for (let b = 0; b < batch; b++) for (let t = 0; t < width; t++) ids[b * width + t] = padded(b, from + t);
      const out = await this.graph.forward(ids, cache, batch);
      cache = out.cache;
      for (let b = 0; b < batch; b++) {
        // Positions past this prompt's end are padding: nothing to score there.
        const targets = prompts[b]!.slice(start + 1, start + chunk + 1);
        scores[b]!.add(await this.rows.score(out.logits, b * width + (start - from), vocab, targets), targets);
      }
      start += chunk;
    }
    return prompts.map((ids, b) => {
      const tokens = ids.slice(1);
      return scores[b]!.result(tokens, this.tokenizer.decode(tokens), false);
    });
  }

  private async sampleOne(request: SampleRequest): Promise<Sample[]> {
    return this.sampleIds(
      encodeTail(request.prompt, this.window, (text) => this.tokenizer.encode(text)),
      request,
      bosHead(this.bosUse),
    );
  }

  /** Samples continuations of `head` (the BOS, or nothing) and a token-id prompt (`request.prompt` is ignored). */
  async sampleIds(promptIds: number[], request: SampleRequest, head: number[] = [], watch?: SampleWatch): Promise<Sample[]> {
    const room = this.window - request.maxTokens;
    if (room < 1)
      throw new ProbeError(`maxTokens ${request.maxTokens} leaves no room for a prompt in the ${this.window}-token window of ${this.dir}`);
    const { ids: prompt, truncated } = fitContext(promptIds, head, [this.tokenizer.prefixId], room);
    if (this.sampler) return this.sampler.sample({ prompt, request, truncated, ...(watch ? { watch } : {}) });
    const samples: Sample[] = [];
    for (let index = 0; index < request.n; index++) samples.push(await this.generateWithoutCache(prompt, request, index, truncated, watch));
    return samples;
  }

  /** A graph without a cache recomputes every position per token: one sample at a time (test and n-gram graphs). */
  private async generateWithoutCache(
    prompt: number[],
    request: SampleRequest,
    index: number,
    truncated: boolean,
    watch?: SampleWatch,
  ): Promise<Sample> {
    const draws = new SampleDraws(request, index, truncated, this.tokenizer, watch);
    for (let row = await this.lastRowWithoutCache(prompt); ; row = await this.lastRowWithoutCache([...prompt, ...draws.tokens])) {
      watch?.signal?.throwIfAborted();
      const done = draws.draw(row);
      if (done) return done;
    }
  }

  private async lastRowWithoutCache(ids: number[]): Promise<Float32Array> {
    const span = Math.min(this.window, this.graph.receptiveField ?? this.window);
    const window = ids.length > span ? ids.slice(ids.length - span) : ids;
    return (await this.graph.forward(window, undefined, 1, 'last')).logits;
  }

  /** The graph sampling steps run through: the decode graph, or why not (opens it if no sample has yet). */
  async decodeInfo(): Promise<{ decoder: true; agreement: number } | { decoder: false; reason: string }> {
    const path = await this.decoder();
    return path instanceof PrefixDecoder ? { decoder: true, agreement: path.agreement } : { decoder: false, reason: path.reason };
  }

  async close(): Promise<void> {
    const path = this.decodePath;
    if (path instanceof PrefixDecoder) await path.close();
    await this.graph.close();
    await this.rows.close();
  }
}

/** One continuation's per-token scores, filled in chunk by chunk as its logits arrive. */
class TokenScores {
  private readonly tokenLogprobs: number[] = [];
  private readonly argmax: Array<{ token: number; logprob: number }> = [];
  private greedy = true;

  add(scored: RowScores, targets: number[]): void {
    targets.forEach((target, i) => {
      this.tokenLogprobs.push(scored.logprob[i]!);
      this.argmax.push({ token: scored.argmax[i]!, logprob: scored.argmaxLogprob[i]! });
      this.greedy &&= scored.argmax[i] === target;
    });
  }

  result(tokens: number[], text: string, truncated: boolean): ScoreResult {
    if (this.tokenLogprobs.length !== tokens.length)
      throw new ProbeError(`scored ${this.tokenLogprobs.length} of ${tokens.length} continuation tokens`);
    return {
      tokenLogprobs: this.tokenLogprobs,
      tokens,
      bytes: utf8.encode(text).length,
      greedy: this.greedy,
      truncated,
      argmax: this.argmax,
    };
  }
}
