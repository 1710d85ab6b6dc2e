/**
 * A small, deterministic ONNX graph builder over `onnx-proto`. Every initializer is
 * stored as little-endian raw_data and every name is chosen by the caller or by a
 * counter, so the same build always serialises to the same bytes.
 */
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;
type TensorProto = OnnxTypes.TensorProto;

export const DType = {
  float: onnx.TensorProto.DataType.FLOAT,
  int32: onnx.TensorProto.DataType.INT32,
  uint8: onnx.TensorProto.DataType.UINT8,
  float16: onnx.TensorProto.DataType.FLOAT16,
  int64: onnx.TensorProto.DataType.INT64,
  bool: onnx.TensorProto.DataType.BOOL,
} as const;
export type DTypeCode = (typeof DType)[keyof typeof DType];

export type Dim = number | string;
type AttrValue = number | number[] | string | { float: number };

export const OPSET = 17;

export class GraphBuilder {
  private readonly nodes: OnnxTypes.INodeProto[] = [];
  private readonly initializers: TensorProto[] = [];
  private readonly inputs: OnnxTypes.IValueInfoProto[] = [];
  private readonly outputs: OnnxTypes.IValueInfoProto[] = [];
  private counter = 0;

  input(name: string, type: DTypeCode, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, type, dims));
    return name;
  }

  output(name: string, type: DTypeCode, dims: Dim[]): void {
    this.outputs.push(valueInfo(name, type, dims));
  }

  /** A float32 initializer. */
  floats(name: string, dims: number[], data: Float32Array | number[]): string {
    const values = data instanceof Float32Array ? data : Float32Array.from(data);
    return this.raw(name, DType.float, dims, new Uint8Array(values.buffer, values.byteOffset, values.byteLength));
  }

  /** A float16 initializer from IEEE half bit patterns. */
  halves(name: string, dims: number[], bits: Uint16Array): string {
    return this.raw(name, DType.float16, dims, new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength));
  }

  /** An int32 initializer. */
  raw32(name: string, dims: number[], data: Int32Array): string {
    return this.raw(name, DType.int32, dims, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }

  /** A uint8 initializer. */
  bytes(name: string, dims: number[], data: Uint8Array): string {
    return this.raw(name, DType.uint8, dims, data);
  }

  ints(name: string, dims: number[], data: number[]): string {
    const values = BigInt64Array.from(data.map((v) => BigInt(v)));
    return this.raw(name, DType.int64, dims, new Uint8Array(values.buffer));
  }

  private raw(name: string, dataType: DTypeCode, dims: number[], bytes: Uint8Array): string {
    const expected = dims.reduce((a, b) => a * b, 1);
    const width = dataType === DType.float16 ? 2 : dataType === DType.int64 ? 8 : dataType === DType.uint8 ? 1 : 4;
    if (expected * width !== bytes.byteLength) {
      throw new Error(`initializer ${name}: ${bytes.byteLength} bytes for dims [${dims}]`);
    }
    this.initializers.push(onnx.TensorProto.create({ name, dataType, dims, rawData: Buffer.from(bytes) }));
    return name;
  }

  /** Adds a node; returns its output names (fresh ones unless given). */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, outputs: string[] | number = 1): string[] {
    const outs = typeof outputs === 'number' ? Array.from({ length: outputs }, () => `${opType.toLowerCase()}_${this.counter++}`) : outputs;
    this.nodes.push(
      onnx.NodeProto.create({
        opType,
        name: `${opType}_${this.nodes.length}`,
        input: inputs,
        output: outs,
        attribute: Object.entries(attrs).map(([name, value]) => attribute(name, value)),
      }),
    );
    return outs;
  }

  /** `op` for single-output nodes. */
  op1(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, output?: string): string {
    return this.op(opType, inputs, attrs, output === undefined ? 1 : [output])[0]!;
  }

  serialize(graphName: string, docString: string): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      producerName: 'probe-checkpoint-generator',
      producerVersion: '1',
      docString,
      opsetImport: [{ domain: '', version: OPSET }],
      graph: onnx.GraphProto.create({
        name: graphName,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      }),
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function valueInfo(name: string, elemType: DTypeCode, dims: Dim[]): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, value: AttrValue): OnnxTypes.IAttributeProto {
  const A = onnx.AttributeProto.AttributeType;
  if (typeof value === 'string') return { name, type: A.STRING, s: Buffer.from(value) };
  if (Array.isArray(value)) return { name, type: A.INTS, ints: value };
  if (typeof value === 'object') return { name, type: A.FLOAT, f: value.float };
  return { name, type: A.INT, i: value };
}

/** Round-to-nearest-even float32 → IEEE half bits. */
export function toHalfBits(values: Float64Array | Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  for (let i = 0; i < values.length; i++) {
    f32[0] = values[i]!;
    const x = u32[0]!;
    const sign = (x >>> 16) & 0x8000;
    const exp = ((x >>> 23) & 0xff) - 127 + 15;
    let mant = x & 0x7fffff;
    if (exp >= 31) {
      out[i] = sign | 0x7c00;
      continue;
    } // overflow → ±inf
    if (exp <= 0) {
      // subnormal or zero
      if (exp < -10) {
        out[i] = sign;
        continue;
      }
      mant |= 0x800000;
      const shift = 14 - exp;
      let half = mant >>> shift;
      const rem = mant & ((1 << shift) - 1);
      const mid = 1 << (shift - 1);
      if (rem > mid || (rem === mid && half & 1)) half++;
      out[i] = sign | half;
      continue;
    }
    let half = (exp << 10) | (mant >>> 13);
    const rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++;
    out[i] = sign | half;
  }
  return out;
}

/** IEEE half bits → number (exact). */
export function fromHalfBits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
