/**
 * Serves one engine checkpoint for the length of a run: starts the engine on loopback ports
 * (llama-server for a GGUF file; `vllm serve` for a Hugging Face directory, one replica per
 * GPU in CUDA_VISIBLE_DEVICES), writes each replica's output to a log file, waits until every
 * replica answers `/health`, and stops them — SIGTERM to the process group, SIGKILL after a
 * grace period — when the run closes the backend, on Ctrl-C, and on any exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ProbeError } from '../errors.ts';
import { onExit, onShutdown } from '../util/shutdown.ts';
import { MAX_STRING_BYTES, openAppend, readTextFile } from '../util/safe-tree.ts';
import { sleep } from '../util/timeout.ts';
import type { EngineTarget } from './engine-target.ts';

/** The engine's settings, each overridable from the environment (docs/checkpoints.md, "GGUF and Hugging Face checkpoints"). */
export const ENGINE_DEFAULTS = {
  /** llama-server's parallel slots: the most samples one request gets (probe splits n to fit). */
  llamaSlots: 16,
  /** Tokens of context per llama-server slot. */
  llamaContextPerSlot: 4096,
  /** Seconds an engine may take to answer /health (vLLM compiles and captures graphs first). */
  startTimeoutS: { llamacpp: 300, vllm: 1800 },
  /**
   * Seconds between SIGTERM and SIGKILL on shutdown. llama-server logs "cleaning up before
   * exit" and then waits on a request still in flight, with nothing of its own to save.
   */
  stopGraceS: { llamacpp: 3, vllm: 15 },
} as const;

export interface RunningEngine {
  /** The replicas' roots, for `--ckpt` (comma-joined). */
  urls: string[];
  logFiles: string[];
  /** llama-server's parallel slots, as started. */
  slots?: number;
  stop(): Promise<void>;
}

function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new ProbeError(`${name}=${raw} is not a positive integer`, { exitCode: 2 });
  return value;
}

/** Extra arguments from the environment, split on spaces (`PROBE_LLAMA_SERVER_ARGS="-ngl 99"`); they come last, so they win. */
function envArgs(name: string): string[] {
  return (process.env[name] ?? '').split(/\s+/).filter(Boolean);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** llama-server's command line, with `slots` parallel slots. */
function llamaServerArgs(path: string, port: number, slots: number): string[] {
  const perSlot = envInt('PROBE_LLAMA_CTX', ENGINE_DEFAULTS.llamaContextPerSlot);
  // Separate KV caches per slot (-no-kvu: a unified one made parallel long prompts 30× slower),
  // float32 KV and no flash attention: the settings whose log-probs were closest to the references.
  return [
    '-m',
    path,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '-np',
    String(slots),
    '-c',
    String(slots * perSlot),
    '-no-kvu',
    '-t',
    String(availableParallelism()),
    '-ctk',
    'f32',
    '-ctv',
    'f32',
    '-fa',
    'off',
    '--no-webui',
    ...envArgs('PROBE_LLAMA_SERVER_ARGS'),
  ];
}

/** `vllm serve`'s command line: float32 and no prefix caching, what docs/checkpoints.md serves scoring with. */
function vllmArgs(path: string, port: number): string[] {
  return [
    'serve',
    path,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--dtype',
    'float32',
    '--no-enable-prefix-caching',
    '--seed',
    '0',
    ...envArgs('PROBE_VLLM_ARGS'),
  ];
}

function logTail(file: string): string {
  try {
    const lines = readTextFile(file, { maxBytes: MAX_STRING_BYTES, what: 'the engine log' })
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    return lines.at(-1)?.slice(0, 300) ?? '(empty log)';
  } catch {
    return '(no log)';
  }
}

async function healthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** Starts the replicas and waits until each is ready; a replica that exits or never gets ready is a one-line error naming its log. */
export async function launchEngine(
  program: string,
  target: EngineTarget,
  options: { logDir: string; name: string; signal?: AbortSignal },
): Promise<RunningEngine> {
  mkdirSync(options.logDir, { recursive: true });
  // vLLM: one replica per GPU named in CUDA_VISIBLE_DEVICES; llama.cpp: one server (it batches its slots).
  const gpus =
    target.engine === 'vllm'
      ? (process.env.CUDA_VISIBLE_DEVICES ?? '')
          .split(',')
          .map((g) => g.trim())
          .filter(Boolean)
      : [];
  const replicas = gpus.length > 1 ? gpus.map((g) => ({ CUDA_VISIBLE_DEVICES: g })) : [{}];
  const children: ChildProcess[] = [];
  const exited = new Map<ChildProcess, string>();
  const stopAll = async () => {
    await Promise.all(children.map((child) => stopChild(child, exited, ENGINE_DEFAULTS.stopGraceS[target.engine])));
  };
  const killAll = () => {
    for (const child of children) if (!exited.has(child)) signalGroup(child, 'SIGKILL');
  };
  const takeBackShutdown = onShutdown(stopAll);
  const takeBackExit = onExit(killAll);
  const release = async () => {
    await stopAll();
    takeBackShutdown();
    takeBackExit();
  };
  // llama-server's slots, read once: its command line and the backend's request split use one number.
  const slots = target.engine === 'llamacpp' ? envInt('PROBE_LLAMA_SLOTS', ENGINE_DEFAULTS.llamaSlots) : undefined;
  const argsFor = (port: number) => (slots === undefined ? vllmArgs(target.path, port) : llamaServerArgs(target.path, port, slots));
  const urls: string[] = [];
  const logFiles: string[] = [];
  try {
    for (const [i, env] of replicas.entries()) {
      const port = await freePort();
      const logFile = join(options.logDir, `${options.name}${replicas.length > 1 ? `.${i}` : ''}.log`);
      // In the run directory (engines/): a FIFO or a link planted there is refused, not waited on or written through.
      const fd = openAppend(logFile);
      const child = spawn(program, argsFor(port), {
        stdio: ['ignore', fd, fd],
        detached: true, // its own process group: vLLM's workers stop with it
        env: { ...process.env, ...env },
      });
      closeSync(fd);
      child.once('exit', (code, signal) => exited.set(child, signal ? `was killed by ${signal}` : `exited with status ${code}`));
      child.once('error', (error) => exited.set(child, `could not start: ${error.message}`));
      children.push(child);
      urls.push(`http://127.0.0.1:${port}`);
      logFiles.push(logFile);
    }
    const timeoutS = envInt('PROBE_ENGINE_START_TIMEOUT_S', ENGINE_DEFAULTS.startTimeoutS[target.engine]);
    const deadline = Date.now() + timeoutS * 1000;
    for (const [i, url] of urls.entries()) {
      const child = children[i]!;
      for (;;) {
        if (options.signal?.aborted) throw options.signal.reason;
        const gone = exited.get(child);
        if (gone)
          throw new ProbeError(`${program} ${gone} before it was ready (log: ${logFiles[i]}): ${logTail(logFiles[i]!)}`, { exitCode: 2 });
        if (await healthy(url)) break;
        if (Date.now() > deadline)
          throw new ProbeError(
            `${program} was not ready after ${timeoutS} s (PROBE_ENGINE_START_TIMEOUT_S; log: ${logFiles[i]}): ${logTail(logFiles[i]!)}`,
            {
              exitCode: 2,
            },
          );
        await sleep(250);
      }
    }
  } catch (error) {
    await release();
    throw error;
  }
  return { urls, logFiles, ...(slots === undefined ? {} : { slots }), stop: release };
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

async function stopChild(child: ChildProcess, exited: Map<ChildProcess, string>, graceS: number): Promise<void> {
  if (exited.has(child) || child.pid === undefined) return;
  const done = new Promise<void>((resolve) => {
    if (exited.has(child)) return resolve();
    child.once('exit', () => resolve());
  });
  signalGroup(child, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), graceS * 1000)));
  const outcome = await Promise.race([done, grace]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    signalGroup(child, 'SIGKILL');
    await done;
  }
}
