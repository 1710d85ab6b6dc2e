/**
 * `--dtype`: which graph of a checkpoint directory to run, by transformers.js's names
 * (fp32 = onnx/model.onnx, fp16 = onnx/model_fp16.onnx, q8 = onnx/model_quantized.onnx, …;
 * src/backends/onnx/dtype.ts). Checkpoints behind servers ignore it: the server chose.
 */
import { type Command, Option } from 'commander';
import { DEFAULT_DTYPE, DTYPE_SUFFIX, DTYPES, type Dtype } from '../backends/onnx/dtype.ts';

export interface DtypeFlags {
  dtype?: Dtype;
}

export function addDtypeOption(command: Command): Command {
  const files = DTYPES.map((d) => `${d}: model${DTYPE_SUFFIX[d]}.onnx`).join(', ');
  return command.addOption(
    new Option('--dtype <name>', `which graph of each checkpoint directory to run (${files})`).choices([...DTYPES]).default(DEFAULT_DTYPE),
  );
}

/** What run.json records (and a resumed run must match): the dtype every directory checkpoint ran at. */
export function dtypeConfig(flags: DtypeFlags): { dtype: Dtype } {
  return { dtype: flags.dtype ?? DEFAULT_DTYPE };
}
