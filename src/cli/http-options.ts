/** Flags for checkpoints behind inference servers (`--ckpt http://…/v1`). */
import { type Command, Option } from 'commander';
import { isServerAddress } from '../backends/checkpoint.ts';
import { type EngineChoice, servedByEngine } from '../engines/engine-target.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import { SERVER_KINDS, type ServerKind } from '../backends/http/servers.ts';
import { DEFAULT_ENDPOINT_OPTIONS as DEFAULTS } from '../backends/http/transport.ts';
import { nonNegativeInteger, positiveInteger, timeoutSeconds } from './args.ts';
import { onShutdown } from '../util/shutdown.ts';

export interface HttpFlags {
  serverKind?: ServerKind;
  tokenizer?: string;
  model?: string;
  httpConcurrency?: number;
  httpTimeout?: number;
  httpRetries?: number;
}

export function addHttpOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--server-kind <kind>', 'how to get prompt log-probs from a server URL (default: detected from /v1/models)').choices([
        ...SERVER_KINDS,
      ]),
    )
    .option('--tokenizer <dir>', "the served checkpoint's tokenizer (tokenizer.json); default: the server's /tokenize")
    .option('--model <name>', 'model name to request from a server (default: its first model)')
    .option('--http-concurrency <n>', 'requests in flight per server replica', positiveInteger, DEFAULTS.concurrency)
    .option('--http-timeout <s>', 'seconds one server request may take', timeoutSeconds, DEFAULTS.timeoutMs / 1000)
    .option('--http-retries <n>', 'retries on 429, 5xx, timeouts and dropped connections', nonNegativeInteger, DEFAULTS.retries);
}

let interrupt: AbortController | undefined;

/**
 * One signal for every server request of this process, aborted on SIGINT/SIGTERM so
 * in-flight requests are cancelled (servers stop generating for a closed connection).
 */
function interruptSignal(): AbortSignal {
  if (!interrupt) {
    const controller = new AbortController();
    interrupt = controller;
    onShutdown((signal) => controller.abort(new Error(`interrupted by ${signal}`)));
  }
  return interrupt.signal;
}

/** `remote`: whether requests may go to servers (default: where a `--ckpt` names one or an engine serves it; `probe watch` does not know yet). */
export function httpOptions(
  flags: HttpFlags & { engine?: EngineChoice | undefined },
  ckpts: readonly string[] = [],
  // Servers, and checkpoints an engine serves for the run: their requests are cancelled on Ctrl-C.
  remote = ckpts.some((spec) => isServerAddress(spec) || servedByEngine(spec, flags.engine)),
): HttpBackendOptions {
  return {
    ...(remote ? { signal: interruptSignal() } : {}),
    ...(flags.serverKind ? { kind: flags.serverKind } : {}),
    ...(flags.tokenizer ? { tokenizerDir: flags.tokenizer } : {}),
    ...(flags.model ? { model: flags.model } : {}),
    endpoint: {
      concurrency: flags.httpConcurrency ?? DEFAULTS.concurrency,
      timeoutMs: flags.httpTimeout === undefined ? DEFAULTS.timeoutMs : flags.httpTimeout * 1000,
      retries: flags.httpRetries ?? DEFAULTS.retries,
    },
  };
}
