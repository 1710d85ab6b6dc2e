/**
 * Batched sampling through the key/value cache: the n samples of a prompt advance one
 * token per forward pass in one batch, and the prompts of one call and of concurrent
 * calls (ASAP episodes, pass@K items) advance in the same steps. A sequence leaves at
 * its stop.
 *
 * Reproducible per sample, whatever the batch: sample i of a request draws from its own
 * random stream (`sample`, seed, i) and reads only its own logits row, and a pass's rows
 * are computed exactly as each would be alone (checked bit for bit on the real
 * checkpoints). How a step is run depends on the checkpoint:
 *
 * - Through probe's shared-prefix decode graph (prefix-decoder.ts), where the export is a
 *   recognised Llama one: the rows of a prompt (a cohort) read its cache once, and only
 *   their generated tokens are theirs. One pass per cohort and step.
 * - Otherwise through the checkpoint's own graph, which takes each row's whole cache and
 *   returns it grown: rows share a pass only with rows of the same length (the samples of
 *   a prompt; prompts that happen to be as long) — left padding rows of different lengths
 *   into one pass would change how it rounds (the softmax sums over more positions), and
 *   at temperature 1 a draw into the tail of an 8K vocabulary is decided by those last
 *   bits often enough to change a sample within a few hundred tokens. Such a pass copies
 *   every row's whole cache, so its cost is memory traffic ∝ rows × tokens; rows of one
 *   length are split into passes within PASS_BUDGET_BYTES.
 */
import type { Sample, SampleRequest } from '../types.ts';
import type { KvCache, OnnxGraph } from './graph.ts';
import { bytesPerCachedToken, stackRows, type RowSource } from './kv-rows.ts';
import type { DecodeCohort, PrefixDecoder } from './prefix-decoder.ts';
import { SampleDraws, type NextToken, type SampleWatch } from './sample-draws.ts';
import type { CheckpointTokenizer } from './tokenizer.ts';

/** One prompt to continue `request.n` times: already fitted to the window (BOS included). */
export interface SampleJob {
  prompt: number[];
  request: SampleRequest;
  truncated: boolean;
  /** Who watches its samples as they are drawn, and may stop them (probe serve's stream). */
  watch?: SampleWatch;
}

/** The prompt's cache and the logits row that predicts its first new token. */
export interface Prefix {
  cache: KvCache;
  lastRow: Float32Array;
}

interface PendingJob extends SampleJob {
  samples: Sample[];
  left: number;
  resolve: (samples: Sample[]) => void;
  reject: (error: unknown) => void;
}

/** One sequence being generated: a sample of a job, and where its cache row is. */
class Sequence {
  readonly draws: SampleDraws;
  /** What predicts its next token: a logits row, or a decode-graph row. */
  next: NextToken;
  /** Checkpoint-graph steps: where its cache row is (row 0 of its prompt's cache, then its row in the last pass it took part in). */
  source: RowSource;
  /** Decode-graph steps: the cohort it is a row of. */
  cohort: Cohort | undefined;

  constructor(
    readonly job: PendingJob,
    readonly index: number,
    prefix: Prefix,
    tokenizer: CheckpointTokenizer,
  ) {
    this.draws = new SampleDraws(job.request, index, job.truncated, tokenizer, job.watch);
    this.next = prefix.lastRow;
    this.source = { cache: prefix.cache, row: 0 };
  }
}

/** Rows of one prompt stepped together by the decode graph, in their row order. */
interface Cohort {
  rows: Sequence[];
  decode: DecodeCohort;
}

/**
 * Cache bytes one checkpoint-graph pass may carry (rows × tokens × bytes per token).
 * Measured on the s1500 checkpoint (bench/sampling.ts; 2 KiB per token): at 1,024 tokens
 * 4 rows (8 MiB) ran 2× faster per token than 1, 16 rows (32 MiB) 3× slower.
 */
const PASS_BUDGET_BYTES = 8 * 2 ** 20;
/** Cache bytes all live sequences may hold at the window's length; further prompts wait (one always runs). */
const LIVE_BUDGET_BYTES = 2 * 2 ** 30;
/** Most rows of a decode-graph cohort: a request's samples beyond it form further cohorts (further passes). */
const COHORT_ROWS = 64;

export class BatchSampler {
  private readonly pending: PendingJob[] = [];
  private running = false;
  /** Sequences that may be live at once (set from the first prompt's cache). */
  private liveRows: number | undefined;

  /**
   * @param feed runs a prompt through the graph (chunked) and returns its cache.
   * @param decoder the shared-prefix decode graph, once known to serve this checkpoint (undefined: the checkpoint's graph steps).
   * @param maxRows most rows per pass (1: one sequence at a time); default: as PASS_BUDGET_BYTES allows, or COHORT_ROWS.
   */
  constructor(
    private readonly graph: OnnxGraph,
    private readonly tokenizer: CheckpointTokenizer,
    private readonly window: number,
    private readonly feed: (ids: number[]) => Promise<Prefix>,
    private readonly decoder: () => Promise<PrefixDecoder | undefined>,
    private readonly maxRows?: number,
  ) {}

  /** Samples `job.request.n` continuations of the job's prompt, in the same steps as whatever else is being sampled. */
  sample(job: SampleJob): Promise<Sample[]> {
    if (job.request.n === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.pending.push({ ...job, samples: new Array<Sample>(job.request.n), left: job.request.n, resolve, reject });
      if (!this.running) void this.loop();
    });
  }

  /** Rows a checkpoint-graph pass over `tokens`-long rows may carry. */
  private rowsPerPass(tokens: number, bytesPerToken: number): number {
    if (this.maxRows) return this.maxRows;
    return Math.max(1, Math.floor(PASS_BUDGET_BYTES / Math.max(1, tokens * bytesPerToken)));
  }

  private async loop(): Promise<void> {
    this.running = true;
    let live: Sequence[] = [];
    try {
      const decoder = await this.decoder();
      for (;;) {
        // Admit prompts while the live sequences' caches fit (one prompt always runs).
        while (this.pending.length > 0) {
          const job = this.pending[0]!;
          if (job.watch?.signal?.aborted) {
            this.pending.shift();
            job.reject(job.watch.signal.reason);
            continue;
          }
          if (live.length > 0 && live.length + job.request.n > (this.liveRows ?? Infinity)) break;
          const prefix = await this.feed(job.prompt);
          this.pending.shift();
          this.liveRows ??= Math.max(1, Math.floor(LIVE_BUDGET_BYTES / (this.window * bytesPerCachedToken(prefix.cache))));
          let admitted: Sequence[];
          try {
            admitted = Array.from({ length: job.request.n }, (_, i) => new Sequence(job, i, prefix, this.tokenizer));
          } catch (error) {
            // A request its sequences cannot be made for fails alone; it is neither pending nor live any more.
            job.reject(error);
            continue;
          }
          if (decoder) this.formCohorts(decoder, admitted, prefix, job.request.maxTokens);
          live.push(...admitted);
        }
        if (live.length === 0) break;

        // Every sequence draws its next token; those that end leave, and so do those whose watcher stopped them.
        live = live.filter((sequence) => {
          const job = sequence.job;
          if (job.watch?.signal?.aborted) {
            if (job.left > 0) job.reject(job.watch.signal.reason);
            job.left = 0;
            return false;
          }
          const done = sequence.draws.draw(sequence.next);
          if (!done) return true;
          job.samples[sequence.index] = done;
          if (--job.left === 0) job.resolve(job.samples);
          return false;
        });
        if (decoder) await this.stepCohorts(live);
        else await this.stepByLength(live);
      }
    } catch (error) {
      // A failed pass fails every request it was serving (and those queued behind it): none can be finished.
      const jobs = new Set(live.map((s) => s.job));
      for (const job of [...jobs, ...this.pending.splice(0)]) job.reject(error);
    } finally {
      this.running = false;
    }
    // A request that arrived as the loop was ending starts the next one.
    if (this.pending.length > 0) void this.loop();
  }

  /** A prompt's sequences as cohorts of at most maxRows (default COHORT_ROWS), each with room for the request's tokens. */
  private formCohorts(decoder: PrefixDecoder, sequences: Sequence[], prefix: Prefix, maxTokens: number): void {
    const size = this.maxRows ?? COHORT_ROWS;
    for (let start = 0; start < sequences.length; start += size) {
      const rows = sequences.slice(start, start + size);
      const cohort: Cohort = { rows, decode: decoder.cohort(prefix.cache, rows.length, maxTokens) };
      for (const s of rows) s.cohort = cohort;
    }
  }

  /** One decode-graph pass per cohort; a cohort first drops the rows that left. */
  private async stepCohorts(live: Sequence[]): Promise<void> {
    const cohorts = new Set(live.map((s) => s.cohort!));
    const stillLive = new Set(live);
    for (const cohort of cohorts) {
      const keep: number[] = [];
      cohort.rows.forEach((s, row) => stillLive.has(s) && keep.push(row));
      cohort.decode.retain(keep);
      cohort.rows = keep.map((row) => cohort.rows[row]!);
      const { probs, logprobs } = await cohort.decode.step(
        cohort.rows.map((s) => s.draws.lastToken),
        cohort.rows[0]!.job.request.temperature,
      );
      const vocab = (probs ?? logprobs)!.length / cohort.rows.length;
      cohort.rows.forEach((s, b) => {
        s.next = { probs: probs?.subarray(b * vocab, (b + 1) * vocab), logprobs: logprobs?.subarray(b * vocab, (b + 1) * vocab) };
      });
    }
  }

  /** Checkpoint-graph passes: sequences of one length share passes (the samples of a prompt, prompts that happen to be as long). */
  private async stepByLength(live: Sequence[]): Promise<void> {
    const byLength = new Map<number, Sequence[]>();
    for (const sequence of live) {
      const group = byLength.get(sequence.source.cache.length);
      if (group) group.push(sequence);
      else byLength.set(sequence.source.cache.length, [sequence]);
    }
    for (const [length, group] of byLength) {
      const perPass = this.rowsPerPass(length, bytesPerCachedToken(group[0]!.source.cache));
      for (let start = 0; start < group.length; start += perPass) {
        const rows = group.slice(start, start + perPass);
        const out = await this.graph.forward(
          rows.map((s) => s.draws.lastToken),
          cacheOf(rows),
          rows.length,
          'last',
        );
        const vocab = out.logits.length / rows.length;
        rows.forEach((s, b) => {
          s.next = out.logits.subarray(b * vocab, (b + 1) * vocab);
          s.source = { cache: out.cache!, row: b };
        });
      }
    }
  }
}

/** The rows' caches as one: the last pass's cache when it holds exactly these rows in this order, else stacked anew. */
function cacheOf(rows: Sequence[]): KvCache {
  const cache = rows[0]!.source.cache;
  const batch = Object.values(cache.tensors)[0]!.dims[0];
  const reuse = batch === rows.length && rows.every((s, b) => s.source.cache === cache && s.source.row === b);
  return reuse ? cache : stackRows(rows.map((s) => s.source));
}
