/**
 * One ONNX causal-LM graph: what it takes (with or without a key/value cache) and a
 * single forward step. Input and output names follow Hugging Face Optimum's exports
 * (`input_ids`, `attention_mask`, `position_ids`, `past_key_values.{i}.key|value` →
 * `logits`, `present.{i}.key|value`), in the variants real exports come in: a float16
 * cache and float16 logits (`model_fp16.onnx`, `model_q4f16.onnx`), a
 * `num_logits_to_keep` / `logits_to_keep` input, no `position_ids` (computed in-graph).
 */
import * as ort from 'onnxruntime-node';
import { describeCause, InputError, ProbeError } from '../../errors.ts';
import type { CheckpointFiles } from '../checkpoint-dir.ts';
import { halvesToFloats } from './half.ts';
import { buildForwardGraph } from '../transformer/forward-graph.ts';
import { openWrittenGraph } from './written-graph.ts';

/** Element types a cache or logits may have; everything past the graph sees float32 logits. */
type FloatType = 'float32' | 'float16';
const FLOAT_TYPES: readonly string[] = ['float32', 'float16'];

/** Names real exports give the input that limits logits to the last N positions (HF: 0 means all). */
const KEEP_INPUTS = ['num_logits_to_keep', 'logits_to_keep'];

function int64Of(ids: ArrayLike<number>): BigInt64Array {
  const out = new BigInt64Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = BigInt(ids[i]!);
  return out;
}

/** The key/value cache after some tokens: opaque tensors plus its length in tokens. */
export interface KvCache {
  tensors: Record<string, ort.Tensor>;
  length: number;
}

export interface ForwardResult {
  /** [tokens × vocab], row-major (float32 whatever the graph produces); [1 × vocab] per row with `rows: 'last'`. */
  logits: Float32Array;
  cache: KvCache | undefined;
}

/**
 * Fatal logs only: a failing run is reported once, by us, as the checkpoint's one-line
 * error (onnxruntime would add a coloured log line). Worker threads sleep instead of
 * spinning between runs: sampling is one small run per token, and on a shared machine
 * (several probe processes, sandboxes, the verifier) spinning threads take the cores the
 * next run needs — measured 1.7–2.2× faster per sampled token on a loaded 2-core machine,
 * and no slower on 512-token chunks.
 */
export const SESSION_OPTIONS: ort.InferenceSession.SessionOptions = {
  logSeverityLevel: 4,
  graphOptimizationLevel: 'all',
  extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
};

export class OnnxGraph {
  readonly hasCache: boolean;
  /** Logits per token: the graph's declared output width, or measured on one token where it is symbolic. */
  get vocab(): number {
    return this.width;
  }
  private width: number;
  readonly window: number;
  /** Tokens the last position depends on, where the checkpoint declares it (no-cache graphs). */
  readonly receptiveField: number | undefined;
  /** Query heads (for sizing chunks); 1 for graphs that declare none. */
  readonly attentionHeads: number;
  private readonly layers: number;
  private readonly kvHeads: number;
  private readonly headDim: number;
  private readonly wantsPositions: boolean;
  private readonly wantsMask: boolean;
  /** The graph's `num_logits_to_keep` / `logits_to_keep` input, if it has one. */
  private readonly keepInput: string | undefined;
  private readonly kvType: FloatType;
  private readonly modelPath: string;

  private constructor(
    private readonly session: ort.InferenceSession,
    files: CheckpointFiles,
    width: number,
  ) {
    const inputs = session.inputNames;
    const configFile = `${files.dir}/config.json`;
    this.modelPath = files.modelPath;
    this.width = width;
    this.wantsPositions = inputs.includes('position_ids');
    this.wantsMask = inputs.includes('attention_mask');
    this.keepInput = KEEP_INPUTS.find((name) => inputs.includes(name));
    if (!inputs.includes('input_ids') || !session.outputNames.includes('logits')) {
      throw new InputError(
        { file: files.modelPath },
        `graph must take "input_ids" and produce "logits" (has inputs ${inputs.join(', ')}; outputs ${session.outputNames.join(', ')})`,
      );
    }
    const pastKeys = inputs.filter((n) => /^past_key_values\.\d+\.key$/.test(n));
    this.hasCache = pastKeys.length > 0;
    this.layers = pastKeys.length;
    const c = files.config;
    this.window = c.max_position_embeddings ?? c.n_positions ?? 2048;
    this.receptiveField = c.probe_receptive_field;
    const heads = c.num_attention_heads;
    this.attentionHeads = heads ?? 1;
    // The graph's own declared cache shape [batch, kv_heads, past, head_dim] wins over config.json.
    const declared = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key');
    const shape = declared?.isTensor ? declared.shape : [];
    const fromGraph = (i: number) => (typeof shape[i] === 'number' ? (shape[i] as number) : undefined);
    this.kvHeads = fromGraph(1) ?? c.num_key_value_heads ?? heads ?? 0;
    this.headDim = fromGraph(3) ?? c.head_dim ?? (c.hidden_size && heads ? c.hidden_size / heads : 0);
    if (declared?.isTensor && !FLOAT_TYPES.includes(declared.type)) {
      throw new InputError(
        { file: files.modelPath },
        `past_key_values are ${declared.type}; this backend serves float32 and float16 caches`,
      );
    }
    // A float16 cache (fp16 exports) is fed as onnxruntime hands it back: presents pass through unchanged.
    this.kvType = declared?.isTensor && declared.type === 'float16' ? 'float16' : 'float32';
    if (this.hasCache) {
      if (!this.kvHeads || !Number.isInteger(this.headDim) || !this.headDim) {
        throw new InputError(
          { file: configFile, field: 'num_key_value_heads' },
          'a graph with past_key_values needs num_attention_heads (or num_key_value_heads) and hidden_size or head_dim',
        );
      }
      if (c.num_hidden_layers !== undefined && c.num_hidden_layers !== this.layers) {
        throw new InputError(
          { file: configFile, field: 'num_hidden_layers' },
          `is ${c.num_hidden_layers} but the graph has ${this.layers} past_key_values layers`,
        );
      }
    }
  }

  static async load(files: CheckpointFiles): Promise<OnnxGraph> {
    let session: ort.InferenceSession;
    try {
      if (files.graph.kind === 'file') session = await ort.InferenceSession.create(files.modelPath, SESSION_OPTIONS);
      else {
        session = await openWrittenGraph(buildForwardGraph(files.graph.model), SESSION_OPTIONS);
      }
    } catch (error) {
      if (error instanceof ProbeError) throw error;
      throw new InputError({ file: files.modelPath }, `not a loadable ONNX model: ${describeCause(error)}`, { cause: error });
    }
    const logits = session.outputMetadata.find((m) => m.name === 'logits');
    const declared = logits?.isTensor && typeof logits.shape[2] === 'number' ? logits.shape[2] : 0;
    let graph: OnnxGraph;
    try {
      graph = new OnnxGraph(session, files, declared);
      // A symbolic width is read off one forward pass over token 0, which every vocabulary has.
      if (!declared) graph.width = (await graph.forward([0], undefined)).logits.length;
    } catch (error) {
      await session.release();
      throw error;
    }
    return graph;
  }

  emptyCache(batch = 1): KvCache {
    const tensors: Record<string, ort.Tensor> = {};
    for (let l = 0; l < this.layers; l++) {
      for (const kind of ['key', 'value']) {
        const dims = [batch, this.kvHeads, 0, this.headDim];
        tensors[`past_key_values.${l}.${kind}`] =
          this.kvType === 'float16'
            ? new ort.Tensor('float16', new Uint16Array(0), dims)
            : new ort.Tensor('float32', new Float32Array(0), dims);
      }
    }
    return { tensors, length: 0 };
  }

  /**
   * Runs `ids` after `cache` (graphs with a cache) or as the whole sequence (graphs
   * without). `ids` holds `batch` rows of equal length, row-major; every row sits at the
   * same positions (callers pad on the right, which causal attention never looks at).
   * Returns logits [batch × tokens × vocab] for every position, or with `rows: 'last'`
   * [batch × 1 × vocab] for the last one (graphs with a logits-to-keep input then compute
   * only that row; others are sliced here).
   */
  async forward(ids: ArrayLike<number>, cache: KvCache | undefined, batch = 1, rows: 'all' | 'last' = 'all'): Promise<ForwardResult> {
    const past = this.hasCache ? (cache ?? this.emptyCache(batch)) : undefined;
    const offset = past?.length ?? 0;
    const n = ids.length / batch;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', int64Of(ids), [batch, n]),
    };
    if (this.wantsMask)
      feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(batch * (offset + n)).fill(1n), [batch, offset + n]);
    if (this.wantsPositions) {
      feeds.position_ids = new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: batch * n }, (_, i) => BigInt(offset + (i % n))),
        [batch, n],
      );
    }
    // HF semantics: 0 keeps every position, 1 only the last.
    if (this.keepInput) feeds[this.keepInput] = new ort.Tensor('int64', BigInt64Array.of(rows === 'last' ? 1n : 0n), []);
    if (past) Object.assign(feeds, past.tensors);
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      out = await this.session.run(feeds, { logSeverityLevel: 4 });
    } catch (error) {
      // A graph that fails on some input fails its checkpoint, as a message: the run goes on with the others.
      throw new ProbeError(
        `${this.modelPath}: onnxruntime failed on ${batch} × ${n} tokens${offset ? ` after ${offset} cached` : ''}: ${describeCause(error).split('\n')[0]}`,
        { cause: error },
      );
    }
    const logits = out.logits!;
    if (!FLOAT_TYPES.includes(logits.type)) {
      throw new InputError({ file: this.modelPath }, `logits are ${logits.type}; this backend serves float32 and float16 logits`);
    }
    const vocab = logits.dims[2]!;
    if (this.width && vocab !== this.width)
      throw new InputError({ file: this.modelPath }, `the graph declares ${this.width} logits per token but produced ${vocab}`);
    const produced = logits.dims[1]!;
    const expected = rows === 'last' && this.keepInput ? 1 : n;
    if (produced !== expected)
      throw new InputError(
        { file: this.modelPath },
        `the graph produced logits for ${produced} positions where ${expected} were asked for`,
      );
    let next: KvCache | undefined;
    if (past) {
      const tensors: Record<string, ort.Tensor> = {};
      for (let l = 0; l < this.layers; l++) {
        tensors[`past_key_values.${l}.key`] = out[`present.${l}.key`]!;
        tensors[`past_key_values.${l}.value`] = out[`present.${l}.value`]!;
      }
      next = { tensors, length: offset + n };
    }
    let data = logits.type === 'float16' ? halvesToFloats(logits.data as Uint16Array) : (logits.data as Float32Array);
    if (rows === 'last' && produced > 1) {
      const last = new Float32Array(batch * vocab);
      for (let b = 0; b < batch; b++)
        last.set(data.subarray((b * produced + produced - 1) * vocab, (b * produced + produced) * vocab), b * vocab);
      data = last;
    }
    return { logits: data, cache: next };
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}
