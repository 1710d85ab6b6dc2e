/** `probe serve`: a checkpoint directory run in process (Hugging Face or ONNX) behind an OpenAI-compatible HTTP server. */
import { basename } from 'node:path';
import { Command } from 'commander';
import { OnnxBackend } from '../backends/onnx/backend.ts';
import { resolveCheckpoint } from '../backends/checkpoint.ts';
import { InputError } from '../errors.ts';
import { EnvironmentError, systemErrorCode, systemReason } from '../errors.ts';
import { createOpenAiServer } from '../serve/openai-server.ts';
import { nonNegativeInteger, positiveInteger, tcpPort } from './args.ts';
import { addCheckpointOptions, type CheckpointFlags } from './checkpoint-options.ts';
import { onShutdown } from '../util/shutdown.ts';

interface ServeFlags extends CheckpointFlags {
  ckpt: string;
  port: number;
  host: string;
  model?: string;
  maxBatch: number;
  batchWindow: number;
}

export function serveCommand(): Command {
  return addCheckpointOptions(
    new Command('serve')
      .description(
        'Serve a checkpoint directory (Hugging Face safetensors or ONNX, run in process) as an OpenAI-compatible server (/v1/completions with echo + logprobs and sampling, /v1/models, /tokenize), so many probe processes share one loaded model.',
      )
      .requiredOption('--ckpt <dir>', 'checkpoint directory: Hugging Face (config.json, safetensors) or ONNX (transformers.js layout)')
      .option('--port <port>', 'TCP port, 0 to 65535 (0: any free port, printed)', tcpPort, 8000)
      .option('--host <host>', 'interface to listen on', '127.0.0.1')
      .option('--model <name>', 'model name to report (default: the directory name)')
      .option('--max-batch <n>', 'scoring requests run together in one batched forward pass, at most', positiveInteger, 16)
      .option('--batch-window <ms>', 'how long the model waits for more requests before a turn (≥ 0)', nonNegativeInteger, 2),
  )
    .addHelpText(
      'after',
      '\nExample:\n  probe serve --ckpt checkpoints/attn-agent --port 8000 &\n  probe bpb --ckpt http://127.0.0.1:8000/v1 --tokenizer checkpoints/attn-agent',
    )
    .action(async (flags: ServeFlags) => {
      const checkpoint = resolveCheckpoint(flags.ckpt, { dtype: flags.dtype, engine: flags.engine });
      if (checkpoint.kind !== 'directory')
        throw new InputError(
          { file: flags.ckpt, field: '--ckpt' },
          checkpoint.kind === 'server'
            ? 'probe serve serves a checkpoint directory, not a server'
            : `probe serve serves a checkpoint directory in process (ONNX or Hugging Face, --engine in-process); this one is served by ${checkpoint.engine === 'llamacpp' ? 'llama-server' : 'vllm serve'} (pass it to --ckpt of the verb directly, and probe starts it)`,
        );
      const backend = await OnnxBackend.open(checkpoint.name, flags.dtype ? { dtype: flags.dtype } : {});
      const server = createOpenAiServer(backend, {
        model: flags.model ?? basename(backend.dir),
        maxBatch: flags.maxBatch,
        batchWindowMs: flags.batchWindow,
      });
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(flags.port, flags.host, () => resolve());
        });
      } catch (error) {
        await backend.close();
        throw listenError(error, flags);
      }
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : flags.port;
      process.stderr.write(`probe serve: ${backend.dir} at http://${flags.host}:${port}/v1\n`);
      // Runs until interrupted; SIGINT/SIGTERM close the listener, then the model.
      await new Promise<void>((resolve) => {
        onShutdown(async () => {
          await new Promise<void>((closed) => server.close(() => closed()));
          await backend.close();
          resolve();
        });
      });
    });
}

/** Why the server could not listen, naming the address: a port in use, one this user may not bind, a host that is not ours. */
function listenError(error: unknown, flags: ServeFlags): EnvironmentError {
  const code = systemErrorCode(error);
  const hint =
    code === 'EADDRINUSE'
      ? '; choose another --port (0 picks a free one)'
      : code === 'EACCES'
        ? '; ports below 1024 need root'
        : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
          ? '; --host must be an address of this machine'
          : '';
  return new EnvironmentError(`--host ${flags.host} --port ${flags.port}: cannot listen: ${systemReason(error)}${hint}`, { cause: error });
}
