/** Reads initializers straight from an .onnx file, independently of onnxruntime. */
import { readFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';
import { fromHalfBits } from '../../scripts/checkpoints/onnx-graph.ts';

const { onnx } = onnxProto;

export function readInitializer(modelPath: string, name: string): { dims: number[]; values: Float64Array } {
  const model = onnx.ModelProto.decode(readFileSync(modelPath));
  const tensor = model.graph!.initializer!.find((t) => t.name === name);
  if (!tensor) throw new Error(`${modelPath} has no initializer ${name}`);
  const raw = Buffer.from(tensor.rawData!);
  const dims = tensor.dims!.map(Number);
  const T = onnx.TensorProto.DataType;
  let values: Float64Array;
  if (tensor.dataType === T.FLOAT16) {
    values = Float64Array.from({ length: raw.length / 2 }, (_, i) => fromHalfBits(raw.readUInt16LE(i * 2)));
  } else if (tensor.dataType === T.FLOAT) {
    values = Float64Array.from({ length: raw.length / 4 }, (_, i) => raw.readFloatLE(i * 4));
  } else if (tensor.dataType === T.INT64) {
    values = Float64Array.from({ length: raw.length / 8 }, (_, i) => Number(raw.readBigInt64LE(i * 8)));
  } else {
    throw new Error(`unsupported initializer type ${tensor.dataType}`);
  }
  return { dims, values };
}
