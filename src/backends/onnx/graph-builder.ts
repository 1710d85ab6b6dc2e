/**
 * A small, deterministic ONNX graph builder over `onnx-proto`. Every initializer is
 * stored as little-endian raw_data and every name is chosen by the caller or by a
 * counter, so the same build always serialises to the same bytes.
 */
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Weight } from '../transformer/model.ts';

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

/**
 * External weights go into files of at most this many bytes each, beside the model file
 * (written-graph.ts), which onnxruntime maps into memory rather than copying.
 */
const WEIGHT_FILE_BYTES = 1024 ** 3;
/** Each external weight starts at a multiple of this (onnxruntime reads them in place as float32). */
const WEIGHT_ALIGN = 64;

interface ExternalWeight {
  file: number;
  offset: number;
  weight: Weight;
}

export class GraphBuilder {
  private readonly nodes: OnnxTypes.INodeProto[] = [];
  private readonly initializers: TensorProto[] = [];
  private readonly inputs: OnnxTypes.IValueInfoProto[] = [];
  private readonly outputs: OnnxTypes.IValueInfoProto[] = [];
  private counter = 0;
  private readonly external: ExternalWeight[] = [];
  /** Bytes placed in each external file so far. */
  private readonly fileBytes: number[] = [];

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

  /** A float32 initializer over little-endian bytes as they are (a checkpoint's raw_data): not copied. */
  floatBytes(name: string, dims: number[], bytes: Uint8Array): string {
    if (dims.reduce((a, b) => a * b, 1) * 4 !== bytes.byteLength)
      throw new Error(`initializer ${name}: ${bytes.byteLength} bytes for dims [${dims}]`);
    this.initializers.push(onnx.TensorProto.create({ name, dataType: DType.float, dims, rawData: bytes }));
    return name;
  }

  /**
   * A float32 initializer kept out of the protobuf (which holds at most 2 GiB): its values
   * are written by `weight.load` into the model's weight files when it is written
   * (`write`), so a weight is read from its checkpoint once per graph and never copied
   * into the serialised model.
   */
  weight(name: string, weight: Weight): string {
    const length = weight.dims.reduce((a, b) => a * b, 1) * 4;
    let file = this.fileBytes.length - 1;
    if (file < 0 || (this.fileBytes[file]! > 0 && this.fileBytes[file]! + length > WEIGHT_FILE_BYTES)) {
      this.fileBytes.push(0);
      file++;
    }
    const offset = this.fileBytes[file]!;
    this.fileBytes[file] = Math.ceil((offset + length) / WEIGHT_ALIGN) * WEIGHT_ALIGN;
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dataType: DType.float,
        dims: weight.dims,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [
          { key: 'location', value: weightFileName(file) },
          { key: 'offset', value: String(offset) },
          { key: 'length', value: String(length) },
        ],
      }),
    );
    this.external.push({ file, offset, weight });
    return name;
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

  /**
   * Writes the model (`model.onnx`) and its weight files into `dir`, each external weight
   * loaded into its place one at a time (so only the largest is ever in memory here);
   * returns the model file's path.
   */
  write(dir: string, graphName: string, docString: string, producerName: string): string {
    const files = this.fileBytes.map((_, file) => openSync(join(dir, weightFileName(file)), 'w', 0o600));
    // One buffer, the size of the largest weight, serves every weight in turn: nothing is left for the collector.
    const sizes = this.external.map(({ weight }) => weight.dims.reduce((a, b) => a * b, 1));
    const buffer = new Float32Array(Math.max(0, ...sizes));
    try {
      this.external.forEach(({ weight, file, offset }, i) => {
        const values = buffer.subarray(0, sizes[i]!);
        weight.load(values);
        writeSync(files[file]!, new Uint8Array(values.buffer, 0, values.byteLength), 0, values.byteLength, offset);
      });
    } finally {
      for (const fd of files) closeSync(fd);
    }
    const model = join(dir, 'model.onnx');
    writeFileSync(model, this.serialize(graphName, docString, producerName), { mode: 0o600 });
    return model;
  }

  serialize(graphName: string, docString: string, producerName = 'probe-checkpoint-generator'): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      producerName,
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

function weightFileName(file: number): string {
  return `weights-${file}.bin`;
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
