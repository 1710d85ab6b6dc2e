/**
 * How each checkpoint directory runs: `--dtype`, which graph of an ONNX export (by
 * transformers.js's names: fp32 = onnx/model.onnx, fp16 = onnx/model_fp16.onnx, q8 =
 * onnx/model_quantized.onnx, …; src/backends/onnx/dtype.ts), and `--engine`, what runs a
 * Hugging Face directory (in process, or vLLM; src/engines/engine-target.ts). Checkpoints
 * behind servers ignore both: the server chose.
 */
import { type Command, Option } from 'commander';
import { DEFAULT_DTYPE, DTYPE_SUFFIX, DTYPES, type Dtype } from '../backends/onnx/dtype.ts';
import { DEFAULT_ENGINE, ENGINE_CHOICES, type EngineChoice } from '../engines/engine-target.ts';

export interface CheckpointFlags {
  dtype?: Dtype;
  engine?: EngineChoice;
}

export function addCheckpointOptions(command: Command): Command {
  const files = DTYPES.map((d) => `${d}: model${DTYPE_SUFFIX[d]}.onnx`).join(', ');
  return command
    .addOption(
      new Option('--dtype <name>', `which graph of each ONNX export to run (${files}; a Hugging Face directory runs in fp32)`)
        .choices([...DTYPES])
        .default(DEFAULT_DTYPE),
    )
    .addOption(
      new Option(
        '--engine <name>',
        'what runs a Hugging Face directory (safetensors): in-process (probe builds its graph), vllm (vllm serve), auto (vLLM where installed with an NVIDIA GPU, else in process)',
      )
        .choices([...ENGINE_CHOICES])
        .default(DEFAULT_ENGINE),
    );
}
