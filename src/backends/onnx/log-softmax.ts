/**
 * Per-row log-softmax of logits, read at one target id per row, run by onnxruntime.
 *
 * Why: scoring needs log p(target) and the argmax at every continuation position, which
 * in JS (logits.ts `logSoftmaxAt`: a max pass and a Math.exp pass over the vocabulary per
 * row) costs more than the forward pass itself once the vocabulary is 32K or more.
 * onnxruntime does the same reductions vectorised and multi-threaded, over a whole
 * chunk's rows in one call, on the logits the graph just returned.
 *
 * Exactness: the max, the argmax (first maximum, as `logSoftmaxAt`) and the target's logit
 * are exact; only the normaliser log Σ exp(x − max) is computed differently. `precision`
 * says how (bench/log-softmax.ts measures both against `logSoftmaxAt`, 128 rows):
 *   - 'mixed' (the default): Sub and Exp in float32 (each term within a few ulp, and all
 *     terms are positive, so no cancellation), then Cast, ReduceSum and Log in float64.
 *     Measured max |Δ| vs `logSoftmaxAt`: 4e-9 nats per token at 8K/32K/152K
 *     vocabularies; the bound we state and test (test/log-softmax.test.ts) is 1e-7 nats
 *     per token, so a 5-token continuation stays within the 5e-7 nats the BPB tests
 *     allow and a 100-token one within 1e-5. 2–3× faster than 'double' (no [rows, vocab]
 *     float64 copy), 4–5× faster than JS.
 *   - 'double': cast to float64 first, everything in float64, as `logSoftmaxAt`:
 *     agrees to ~1e-14 nats, at about twice the cost of 'mixed'. Kept for comparison.
 * The target's log-prob is formed in float64 from exact pieces: x_t − max − log Σ.
 */
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { describeCause, ProbeError } from '../../errors.ts';
import { SESSION_OPTIONS } from './graph.ts';

const { onnx } = onnxProto;
const T = onnx.TensorProto.DataType;

export type LogSoftmaxPrecision = 'double' | 'mixed';

/** What `logSoftmaxAt` returns, for a batch of rows. */
export interface RowScores {
  /** log p(target) per row. */
  logprob: Float64Array;
  /** The first maximum per row. */
  argmax: Int32Array;
  /** log p(argmax) per row. */
  argmaxLogprob: Float64Array;
}

export class LogSoftmaxSession {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async create(precision: LogSoftmaxPrecision = 'mixed'): Promise<LogSoftmaxSession> {
    // The model's own options: this session runs briefly between the model's passes, and idle
    // threads that spun would take the cores the model's pool needs for the next pass.
    const session = await ort.InferenceSession.create(buildGraph(precision), SESSION_OPTIONS);
    return new LogSoftmaxSession(session);
  }

  /**
   * Scores `targets.length` consecutive rows of `vocab` logits starting at row `firstRow`
   * of `logits` (row-major). The rows are handed to onnxruntime as a view, not copied in JS.
   */
  async score(logits: Float32Array, firstRow: number, vocab: number, targets: ArrayLike<number>): Promise<RowScores> {
    const rows = targets.length;
    if (rows === 0) return { logprob: new Float64Array(0), argmax: new Int32Array(0), argmaxLogprob: new Float64Array(0) };
    const view = logits.subarray(firstRow * vocab, (firstRow + rows) * vocab);
    if (view.length !== rows * vocab)
      throw new ProbeError(`log-softmax: ${rows} rows of ${vocab} from row ${firstRow} overrun ${logits.length} logits`);
    const ids = new BigInt64Array(rows);
    for (let i = 0; i < rows; i++) {
      const t = targets[i]!;
      if (!(t >= 0 && t < vocab)) throw new ProbeError(`log-softmax: target id ${t} is outside the ${vocab}-logit vocabulary`);
      ids[i] = BigInt(t);
    }
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      out = await this.session.run({
        logits: new ort.Tensor('float32', view, [rows, vocab]),
        targets: new ort.Tensor('int64', ids, [rows, 1]),
      });
    } catch (error) {
      throw new ProbeError(`log-softmax over ${rows} × ${vocab} logits failed: ${describeCause(error).split('\n')[0]}`, { cause: error });
    }
    const argmax64 = out.argmax!.data as BigInt64Array;
    const argmax = new Int32Array(rows);
    for (let i = 0; i < rows; i++) argmax[i] = Number(argmax64[i]!);
    return {
      logprob: Float64Array.from(out.logprob!.data as Float64Array),
      argmax,
      argmaxLogprob: Float64Array.from(out.argmax_logprob!.data as Float64Array),
    };
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/**
 * logits [rows, vocab] float32, targets [rows, 1] int64 →
 * logprob [rows, 1] double, argmax [rows] int64, argmax_logprob [rows, 1] double.
 */
function buildGraph(precision: LogSoftmaxPrecision): Uint8Array {
  const nodes: OnnxTypes.INodeProto[] = [];
  const op = (opType: string, input: string[], output: string, attrs: OnnxTypes.IAttributeProto[] = []) => {
    nodes.push(onnx.NodeProto.create({ opType, name: output, input, output: [output], attribute: attrs }));
    return output;
  };
  const int = (name: string, i: number): OnnxTypes.IAttributeProto => ({ name, type: onnx.AttributeProto.AttributeType.INT, i });
  const ints = (name: string, v: number[]): OnnxTypes.IAttributeProto => ({ name, type: onnx.AttributeProto.AttributeType.INTS, ints: v });

  // ArgMax keeps the first maximum (select_last_index 0), as logSoftmaxAt does.
  op('ArgMax', ['logits'], 'argmax', [int('axis', 1), int('keepdims', 0), int('select_last_index', 0)]);
  const max = op('ReduceMax', ['logits'], 'max', [ints('axes', [1]), int('keepdims', 1)]);
  const target = op('GatherElements', ['logits', 'targets'], 'target', [int('axis', 1)]);
  let terms: string;
  if (precision === 'double') {
    const wide = op('Cast', ['logits'], 'wide', [int('to', T.DOUBLE)]);
    const wideMax = op('Cast', [max], 'wide_max', [int('to', T.DOUBLE)]);
    terms = op('Exp', [op('Sub', [wide, wideMax], 'shifted')], 'terms');
  } else {
    terms = op('Cast', [op('Exp', [op('Sub', ['logits', max], 'shifted')], 'terms32')], 'terms', [int('to', T.DOUBLE)]);
  }
  const logSum = op('Log', [op('ReduceSum', [terms, 'axis1'], 'sum', [int('keepdims', 1)])], 'log_sum');
  op('Neg', [logSum], 'argmax_logprob');
  const targetShift = op(
    'Sub',
    [op('Cast', [target], 'wide_target', [int('to', T.DOUBLE)]), op('Cast', [max], 'max64', [int('to', T.DOUBLE)])],
    'target_shift',
  );
  op('Sub', [targetShift, logSum], 'logprob');

  const tensorType = (elemType: number, dims: Array<number | string>): OnnxTypes.ITypeProto => ({
    tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } },
  });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'probe',
    opsetImport: [{ domain: '', version: 17 }],
    graph: onnx.GraphProto.create({
      name: `log_softmax_${precision}`,
      node: nodes,
      initializer: [onnx.TensorProto.create({ name: 'axis1', dataType: T.INT64, dims: [1], int64Data: [1] })],
      input: [
        { name: 'logits', type: tensorType(T.FLOAT, ['rows', 'vocab']) },
        { name: 'targets', type: tensorType(T.INT64, ['rows', 1]) },
      ],
      output: [
        { name: 'logprob', type: tensorType(T.DOUBLE, ['rows', 1]) },
        { name: 'argmax', type: tensorType(T.INT64, ['rows']) },
        { name: 'argmax_logprob', type: tensorType(T.DOUBLE, ['rows', 1]) },
      ],
    }),
  });
  return onnx.ModelProto.encode(model).finish();
}
