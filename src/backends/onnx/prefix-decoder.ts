/**
 * Sampling steps through probe's shared-prefix decode graph (decode-graph.ts): the rows
 * of one prompt read its cache as one tensor, and each row's generated keys and values
 * live in buffers that grow in place.
 *
 * A checkpoint gets this path only when its export is recognised (llama-export.ts) and
 * the decode graph agrees with the checkpoint's own graph on a test sequence: log-probs
 * after a prompt cache and several generated tokens, within AGREEMENT of the export's
 * own full pass. Otherwise sampling runs through the checkpoint's graph as before
 * (batch-sampler.ts), and `reason` says why. Scoring never uses this graph.
 */
import * as ort from 'onnxruntime-node';
import { describeCause, ProbeError } from '../../errors.ts';
import type { CheckpointFiles } from '../checkpoint-dir.ts';
import { buildDecodeGraph } from '../transformer/decode-graph.ts';
import type { TransformerModel, TransformerSpec } from '../transformer/model.ts';
import { SESSION_OPTIONS, type KvCache, type OnnxGraph } from './graph.ts';
import { openWrittenGraph } from './written-graph.ts';
import { llamaModel, NotRecognised, readLlamaExport } from './llama-export.ts';

/**
 * Largest |Δ log-prob| allowed between the decode graph and the checkpoint's own graph
 * on the check sequence. The two differ only in the order of float32 operations
 * (measured on llama-bpe8k-s1500: ~1e-5); a misread weight or wiring moves log-probs by
 * whole units.
 */
const AGREEMENT = 1e-3;
/** Tokens of the check: a prompt of CHECK_PROMPT, then CHECK_STEPS generated one by one. */
const CHECK_PROMPT = 9;
const CHECK_STEPS = 4;

/**
 * Next-token distributions of a step's rows, [rows × vocab]: the tempered probabilities
 * (which a draw reads) unless the step is greedy, and the untempered log-probabilities
 * unless the temperature is 1 (where they are the logarithms of the probabilities). A step
 * fetches only these: the others are not copied into JavaScript (12% of a 16-row step at a short prompt).
 */
export interface DecodedRows {
  probs?: Float32Array;
  logprobs?: Float32Array;
}

export class PrefixDecoder {
  /** Largest |Δ log-prob| against the checkpoint's own graph on the check sequence. */
  agreement = Infinity;

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly shape: TransformerSpec,
    private readonly layers: number,
    readonly modelPath: string,
  ) {}

  /** The decoder for a checkpoint, or why it has none (its samples then come from its own graph). */
  static async open(files: CheckpointFiles, graph: OnnxGraph): Promise<PrefixDecoder | { reason: string }> {
    if (!graph.hasCache) return { reason: 'the graph has no key/value cache' };
    let decoder: PrefixDecoder;
    try {
      // A built graph's model is known; an export's is read from its graph, where it is a Llama one.
      const model = files.graph.kind === 'built' ? files.graph.model : llamaModel(readLlamaExport(files));
      decoder = await PrefixDecoder.build(model, files.modelPath);
    } catch (error) {
      if (error instanceof NotRecognised) return { reason: `not a recognised Llama export: ${error.message}` };
      return { reason: `the decode graph failed to build: ${describeCause(error).split('\n')[0]}` };
    }
    const disagreement = await decoder.disagreement(graph);
    decoder.agreement = disagreement;
    if (disagreement <= AGREEMENT) return decoder;
    await decoder.close();
    return { reason: `the decode graph's log-probs differ from the checkpoint's own by ${disagreement.toExponential(2)}` };
  }

  /** The decode graph of `model`, unchecked (`open` checks it against the export's own graph). */
  static async build(model: TransformerModel, modelPath: string): Promise<PrefixDecoder> {
    const session = await openWrittenGraph(buildDecodeGraph(model), SESSION_OPTIONS);
    return new PrefixDecoder(session, model.spec, model.spec.layers, modelPath);
  }

  /** A cohort of `rows` sequences continuing `prefix` (a one-row prompt cache), with room for `capacity` new tokens each. */
  cohort(prefix: KvCache, rows: number, capacity: number): DecodeCohort {
    return new DecodeCohort(this, prefix, rows, capacity, this.shape, this.layers);
  }

  /** @internal one step of the graph. */
  async run(
    feeds: Record<string, ort.Tensor>,
    fetches: string[],
    rows: number,
    offset: number,
  ): Promise<ort.InferenceSession.OnnxValueMapType> {
    try {
      return await this.session.run(feeds, fetches, { logSeverityLevel: 4 });
    } catch (error) {
      throw new ProbeError(
        `${this.modelPath}: onnxruntime failed on a decode step of ${rows} rows at position ${offset}: ${describeCause(error).split('\n')[0]}`,
        { cause: error },
      );
    }
  }

  /**
   * Largest |Δ log-prob| against the checkpoint's graph: the log-softmax of its full pass
   * over a test sequence vs its cache of the first CHECK_PROMPT tokens continued here, as
   * two identical rows (which must also agree with each other bit for bit).
   */
  private async disagreement(graph: OnnxGraph): Promise<number> {
    const vocab = this.shape.vocab;
    const ids = Array.from({ length: CHECK_PROMPT + CHECK_STEPS }, (_, i) => (i * 7919 + 13) % vocab);
    const full = (await graph.forward(ids, undefined)).logits;
    const prompt = await graph.forward(ids.slice(0, CHECK_PROMPT), undefined, 1, 'last');
    const cohort = this.cohort(prompt.cache!, 2, CHECK_STEPS);
    let worst = 0;
    for (let t = CHECK_PROMPT; t < ids.length; t++) {
      const logprobs = (await cohort.step([ids[t]!, ids[t]!], 0)).logprobs!;
      const expected = logSoftmax(full.subarray(t * vocab, (t + 1) * vocab));
      for (let i = 0; i < vocab; i++) {
        if (logprobs[i] !== logprobs[vocab + i]) return Infinity;
        worst = Math.max(worst, Math.abs(logprobs[i]! - expected[i]!));
      }
    }
    return Number.isNaN(worst) ? Infinity : worst;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

function logSoftmax(row: Float32Array): Float64Array {
  let max = -Infinity;
  for (const v of row) max = Math.max(max, v);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const log = Math.log(sum);
  return Float64Array.from(row, (v) => v - max - log);
}

/**
 * Rows continuing one prompt, one token per step. Each layer's generated keys and values
 * are one buffer [capacity, rows, kv_heads, head_dim]: a step writes its new token at
 * the end and feeds the filled part as a view, so nothing already cached is copied.
 */
export class DecodeCohort {
  private keys: Float32Array[];
  private values: Float32Array[];
  /** Tokens generated so far (the suffix length). */
  private length = 0;
  private readonly prefixFeeds: Record<string, ort.Tensor> = {};
  /** The step's new keys and values, fetched every step. */
  private readonly cacheOutputs: string[] = [];
  /** Floats one token takes in one layer's keys (or values): kv_heads × head_dim. */
  private readonly perToken: number;

  constructor(
    private readonly decoder: PrefixDecoder,
    private readonly prefix: KvCache,
    private rows: number,
    private readonly capacity: number,
    private readonly shape: Pick<TransformerSpec, 'kvHeads' | 'headDim'>,
    private readonly layers: number,
  ) {
    this.perToken = shape.kvHeads * shape.headDim;
    for (let l = 0; l < layers; l++) {
      for (const kind of ['key', 'value']) {
        this.prefixFeeds[`prefix.${l}.${kind}`] = prefix.tensors[`past_key_values.${l}.${kind}`]!;
        this.cacheOutputs.push(`new.${l}.${kind}`);
      }
    }
    this.keys = this.buffers(rows);
    this.values = this.buffers(rows);
  }

  private buffers(rows: number): Float32Array[] {
    return Array.from({ length: this.layers }, () => new Float32Array(this.capacity * rows * this.perToken));
  }

  /** Feeds one token per row; returns each row's next-token distribution, [rows × vocab] row-major. */
  async step(tokens: number[], temperature: number): Promise<DecodedRows> {
    if (tokens.length !== this.rows) throw new ProbeError(`a decode step of ${this.rows} rows got ${tokens.length} tokens`);
    if (this.length >= this.capacity) throw new ProbeError(`a decode cohort with room for ${this.capacity} tokens was asked for more`);
    const position = this.prefix.length + this.length;
    const filled = this.length * this.rows * this.perToken;
    const dims = [this.length, this.rows, this.shape.kvHeads, this.shape.headDim];
    const feeds: Record<string, ort.Tensor> = {
      ...this.prefixFeeds,
      input_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [this.rows]),
      position: new ort.Tensor('float32', Float32Array.of(position), [1]),
      inverse_temperature: new ort.Tensor('float32', Float32Array.of(temperature > 0 ? 1 / temperature : 1), [1]),
    };
    for (let l = 0; l < this.layers; l++) {
      feeds[`suffix.${l}.key`] = new ort.Tensor('float32', this.keys[l]!.subarray(0, filled), dims);
      feeds[`suffix.${l}.value`] = new ort.Tensor('float32', this.values[l]!.subarray(0, filled), dims);
    }
    const wants = [...(temperature > 0 ? ['probs'] : []), ...(temperature !== 1 ? ['logprobs'] : [])];
    const out = await this.decoder.run(feeds, [...wants, ...this.cacheOutputs], this.rows, position);
    for (let l = 0; l < this.layers; l++) {
      this.keys[l]!.set(out[`new.${l}.key`]!.data as Float32Array, filled);
      this.values[l]!.set(out[`new.${l}.value`]!.data as Float32Array, filled);
    }
    this.length++;
    return { probs: out.probs?.data as Float32Array | undefined, logprobs: out.logprobs?.data as Float32Array | undefined };
  }

  /** Keeps only the rows at `keep` (ascending indices into the current rows), in that order. */
  retain(keep: number[]): void {
    if (keep.length === this.rows) return;
    const compact = (from: Float32Array[]) =>
      from.map((buffer) => {
        const out = new Float32Array(this.capacity * keep.length * this.perToken);
        for (let t = 0; t < this.length; t++) {
          keep.forEach((row, b) => {
            const source = (t * this.rows + row) * this.perToken;
            out.set(buffer.subarray(source, source + this.perToken), (t * keep.length + b) * this.perToken);
          });
        }
        return out;
      });
    this.keys = compact(this.keys);
    this.values = compact(this.values);
    this.rows = keep.length;
  }
}
