/**
 * The real TensorBoard, to read back the events files `--tensorboard` writes: its program
 * ($PROBE_TENSORBOARD, else `tensorboard` on PATH) served on loopback, and its Python
 * package (`python3`'s) decoding a file record by record. Tests skip where either is
 * missing; with PROBE_REQUIRE_TENSORBOARD set (CI), a missing one fails them instead.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';

function found(): { program: string; python: string } | null {
  const program = process.env.PROBE_TENSORBOARD || spawnSync('which', ['tensorboard'], { encoding: 'utf8' }).stdout.trim();
  if (!program) return null;
  const imports = spawnSync('python3', ['-c', 'import tensorboard.compat.proto.event_pb2'], { encoding: 'utf8', timeout: 60_000 });
  return imports.status === 0 ? { program, python: 'python3' } : null;
}

export const tensorboard = found();
if (!tensorboard && process.env.PROBE_REQUIRE_TENSORBOARD) {
  throw new Error('PROBE_REQUIRE_TENSORBOARD is set but no tensorboard (PATH or $PROBE_TENSORBOARD) with python3 able to import it');
}
export const skipWithoutTensorboard = !tensorboard;

export interface DecodedEvent {
  wall_time: number;
  step: number;
  file_version: string;
  values: Array<{ tag: string; simple_value: number }>;
}

/**
 * An events file as TensorBoard's own reader and protos see it. The raw loader: the other
 * one moves simple_value into a tensor on the way.
 */
export function decodeEvents(file: string): DecodedEvent[] {
  const script = `
import json, sys
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto import event_pb2
out = []
for raw in RawEventFileLoader(sys.argv[1]).Load():
    e = event_pb2.Event.FromString(raw)
    out.append({"wall_time": e.wall_time, "step": e.step, "file_version": e.file_version,
                "values": [{"tag": v.tag, "simple_value": v.simple_value} for v in e.summary.value]})
print(json.dumps(out))
`;
  const run = spawnSync(tensorboard!.python, ['-c', script, file], { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`decoding ${file} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as DecodedEvent[];
}

/** A protobuf message as Python's serializer writes it: `expression` builds it from `event_pb2` and `summary_pb2`. */
export function pythonSerialized(expression: string): Buffer {
  const script = `import sys\nfrom tensorboard.compat.proto import event_pb2, summary_pb2\nsys.stdout.write((${expression}).SerializeToString().hex())`;
  const run = spawnSync(tensorboard!.python, ['-c', script], { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`python failed: ${run.stderr}`);
  return Buffer.from(run.stdout, 'hex');
}

export interface ServedTensorboard {
  url: string;
  get<T>(path: string): Promise<T>;
  stop(): Promise<void>;
}

/** `tensorboard --logdir DIR` on a free loopback port, reloading every second; resolves once it says where it listens. */
export async function serveTensorboard(logdir: string, timeoutMs = 90_000): Promise<ServedTensorboard> {
  const child: ChildProcess = spawn(
    tensorboard!.program,
    ['--logdir', logdir, '--host', '127.0.0.1', '--port', '0', '--reload_interval', '1'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGKILL');
    await once(child, 'close');
  };
  let log = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`tensorboard did not start within ${timeoutMs} ms:\n${log}`)), timeoutMs);
    const look = (d: Buffer) => {
      log += d;
      const m = /at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.on('close', () => {
      clearTimeout(timer);
      reject(new Error(`tensorboard exited before serving:\n${log}`));
    });
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return {
    url,
    async get<T>(path: string): Promise<T> {
      const answer = await fetch(new URL(path, url), { signal: AbortSignal.timeout(30_000) });
      if (!answer.ok) throw new Error(`${path}: HTTP ${answer.status}: ${await answer.text()}`);
      return (await answer.json()) as T;
    },
    stop,
  };
}
