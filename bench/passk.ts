/**
 * pass@K benchmark: share of wall time spent outside the model (sampling) and the verifier
 * (sandbox restore, action, tests) — the harness's own overhead — and wall time with
 * sampling steps through the export's own graph (`decode: 'graph'`, as before the decode
 * graph) against the default (the shared-prefix decode graph where the checkpoint has
 * one), side by side. The demo's settings: `-n 8 --max-tokens 640 --items 100`.
 * Usage: npx tsx bench/passk.ts [-n N] [--items I] [--max-tokens T] [--ckpt DIR ...]
 */
import { join } from 'node:path';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { CompletionBackend } from '../src/backends/types.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { scorePassk } from '../src/probes/passk.ts';
import { restoreProbeState } from '../src/probes/restore.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { TaskPools } from '../src/sandbox/pool.ts';
import type { Sandbox } from '../src/sandbox/types.ts';
import type { LoadedTask } from '../src/schema/task.ts';
import { loadTasks } from '../src/verify/load-task.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const n = Number(arg('-n', '4'));
const maxTokens = Number(arg('--max-tokens', '1024'));
const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'))
  .filter((i) => !i.id.endsWith(':asap'))
  .slice(0, Number(arg('--items', '6')));
const tasks = new Map((await loadTasks(join(REPO_ROOT, 'verifiers'))).map((t) => [t.instance_id, t]));
const checkpoints = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--ckpt' ? [a] : []));
const runs = (checkpoints.length ? checkpoints : ['contaminated-agent', 'attn-agent'].map((c) => join(EMBEDDED_CHECKPOINTS, c))).flatMap(
  (dir) => [
    { dir, decode: 'graph' as const, mode: 'export graph' },
    { dir, decode: 'auto' as const, mode: 'default' },
  ],
);
const walls = new Map<string, number>();
for (const { dir, decode, mode } of runs) {
  const name = `${dir.split('/').pop()} (${mode})`;
  const inner = await OnnxBackend.open(dir, { decode });
  let modelMs = 0;
  let verifierMs = 0;
  const backend: CompletionBackend = {
    id: inner.id,
    encode: (t) => inner.encode(t),
    close: () => inner.close(),
    score: (r) => inner.score(r),
    sample: async (r) => {
      const t = performance.now();
      try {
        return await inner.sample(r);
      } finally {
        modelMs += performance.now() - t;
      }
    },
  };
  // Time in the sandboxes — restores, actions, tests — whichever pool (agents or graders) the call is in.
  const timedSandbox = async (task: LoadedTask): Promise<Sandbox> => {
    const sb = await openSandbox('local', task);
    const timed =
      <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        const t = performance.now();
        try {
          return await fn(...args);
        } finally {
          verifierMs += performance.now() - t;
        }
      };
    return Object.assign(Object.create(sb) as Sandbox, {
      exec: timed(sb.exec.bind(sb)),
      restore: timed(sb.restore.bind(sb)),
      diff: timed(sb.diff.bind(sb)),
    });
  };
  const pools = new TaskPools(timedSandbox, 2);
  const started = performance.now();
  const result = await scorePassk(name, backend, items, {
    n,
    ks: [1],
    temperature: 0.7,
    topP: 0.95,
    maxTokens,
    seed: 0,
    taskOf: (i) => tasks.get(i.task)!,
    leaseFor: pools.leaseFor,
    gradersFor: pools.gradersFor,
    restore: restoreProbeState,
  });
  const wall = performance.now() - started;
  const path = await inner.decodeInfo(); // opened by the first sample: its build and check are in the wall time
  await pools.close();
  await backend.close();
  const outside = wall - modelMs - verifierMs;
  console.log(
    `${name}: ${items.length} items × n=${n}, pass@1 ${result.pass_at['1']!.toFixed(2)} — wall ${(wall / 1000).toFixed(1)} s = model ${(modelMs / 1000).toFixed(1)} s + verifier ${(verifierMs / 1000).toFixed(1)} s + harness ${(outside / 1000).toFixed(2)} s (${((100 * outside) / wall).toFixed(1)}% outside model and verifier; negative where sampling overlaps verification)`,
  );
  walls.set(`${dir}\0${mode}`, wall);
  if (mode === 'default')
    console.log(
      `  ${path.decoder ? 'decode graph' : `export graph (${path.reason})`} / export graph: ${(walls.get(`${dir}\0export graph`)! / wall).toFixed(2)}× faster`,
    );
}
