/**
 * ASAP benchmark, measured side by side in one run:
 * (a) harness overhead — wall time spent neither in the model (sampling), nor in the
 *     sandbox (actions, tree diffs, restoring, grading) — as a share of wall time, at
 *     concurrency 1 where nothing overlaps;
 * (b) episodes per hour at concurrency 1, 2 and 4 (one shared backend, one sandbox per episode);
 * (c) with `--decode-ab`: wall time at concurrency 2 with sampling steps through the
 *     export's own graph (`decode: 'graph'`, as before the decode graph) against the
 *     default, at the demo's ASAP settings (≤ 1,024 new tokens a step; the same instances,
 *     runs and steps as above). Only (c) runs with `--decode-ab`.
 * Usage: npx tsx bench/asap.ts [--ckpt NAME] [--instances N] [--runs R] [--max-steps S] [--decode-ab]
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asapFormat } from '../src/formats/asap-transcripts.ts';
import { prepareInstances } from '../src/swe/prepare.ts';
import { runAsap } from '../src/swe/run.ts';
import { AsapStore } from '../src/swe/store.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import { TaskPools } from '../src/sandbox/pool.ts';
import { loadTasks } from '../src/verify/load-task.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const ckpt = arg('--ckpt', 'attn-agent');
const instanceCount = Number(arg('--instances', '4'));
const runs = Number(arg('--runs', '2'));
const maxSteps = Number(arg('--max-steps', '10'));

const tasks = (await loadTasks(join(REPO_ROOT, 'verifiers'))).slice(0, instanceCount);
const format = asapFormat('md+xml');
const decodeAb = process.argv.includes('--decode-ab');
const backend = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, ckpt));
const prefixStore = new AsapStore(join(tmpdir(), `probe-bench-asap-prefixes-${process.pid}`));
const prepPools = new TaskPools((t) => openSandbox('local', t), 1);
const { instances } = await prepareInstances(
  tasks,
  join(REPO_ROOT, 'trajectories'),
  { steps: 3, profile: 'bash', format },
  prefixStore,
  prepPools.leaseFor,
);
await prepPools.close();

console.log(
  `ASAP bench: ${ckpt}, ${instances.length} instances × ${runs} runs, ≤ ${maxSteps} steps, md+xml, bash profile, local sandbox\n`,
);
if (decodeAb) {
  const walls = new Map<string, number>();
  for (const decode of ['graph', 'auto'] as const) {
    const sampler = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, ckpt), { decode });
    const dir = join(tmpdir(), `probe-bench-asap-${process.pid}-${decode}`);
    const pools = new TaskPools((t) => openSandbox('local', t), 2);
    const started = performance.now();
    const result = await runAsap(ckpt, sampler, instances, {
      runs,
      concurrency: 2,
      seed: 0,
      ks: [1],
      store: new AsapStore(dir),
      leaseFor: pools.leaseFor,
      gradersFor: pools.gradersFor,
      settings: { format, profile: 'bash', maxSteps, maxTokens: 1024, temperature: 0.7, topP: 0.95, actionTimeoutMs: 60_000 },
    });
    const wall = performance.now() - started;
    const path = await sampler.decodeInfo();
    await pools.close();
    await sampler.close();
    rmSync(dir, { recursive: true, force: true });
    const steps = result.items.reduce((a, i) => a + i.runs.reduce((b, r) => b + r.steps, 0), 0);
    const name = decode === 'graph' ? 'export graph' : path.decoder ? 'decode graph' : `export graph (${path.reason})`;
    walls.set(decode, wall);
    console.log(
      `(c) ${name}: ${instances.length * runs} episodes, ${steps} steps, concurrency 2: wall ${(wall / 1000).toFixed(1)} s (model ${(result.timing.model_ms / 1000).toFixed(1)} s)`,
    );
  }
  console.log(`    default / export graph: ${(walls.get('graph')! / walls.get('auto')!).toFixed(2)}× faster`);
}
const rows: string[] = [];
let firstRate = 0;
for (const concurrency of decodeAb ? [] : [1, 2, 4]) {
  const dir = join(tmpdir(), `probe-bench-asap-${process.pid}-${concurrency}`);
  const store = new AsapStore(dir);
  const pools = new TaskPools((t) => openSandbox('local', t), concurrency);
  const started = performance.now();
  const result = await runAsap(ckpt, backend, instances, {
    runs,
    concurrency,
    seed: 0,
    ks: [1],
    store,
    leaseFor: pools.leaseFor,
    gradersFor: pools.gradersFor,
    settings: { format, profile: 'bash', maxSteps, maxTokens: 2048, temperature: 0.7, topP: 0.95, actionTimeoutMs: 60_000 },
  });
  const wall = performance.now() - started;
  await pools.close();
  rmSync(dir, { recursive: true, force: true });
  const episodes = instances.length * runs;
  const perHour = (episodes / wall) * 3_600_000;
  if (concurrency === 1) {
    firstRate = perHour;
    const t = result.timing;
    const inside = t.model_ms + t.sandbox_ms + t.setup_ms + t.verify_ms;
    const steps = result.items.reduce((a, i) => a + i.runs.reduce((b, r) => b + r.steps, 0), 0);
    console.log(
      `(a) concurrency 1, ${episodes} episodes, ${steps} steps: wall ${(wall / 1000).toFixed(1)} s = model ${(t.model_ms / 1000).toFixed(1)} s + actions ${(t.sandbox_ms / 1000).toFixed(1)} s + restore ${(t.setup_ms / 1000).toFixed(1)} s + grading ${(t.verify_ms / 1000).toFixed(1)} s + harness ${((wall - inside) / 1000).toFixed(2)} s`,
    );
    console.log(`    harness overhead: ${((100 * (wall - inside)) / wall).toFixed(2)}% of wall time (goal < 5%)\n`);
  }
  rows.push(
    `    concurrency ${concurrency}: ${(wall / 1000).toFixed(1)} s, ${perHour.toFixed(0)} episodes/hour (${(perHour / firstRate).toFixed(2)}× concurrency 1)`,
  );
}
if (!decodeAb) console.log(`(b) throughput\n${rows.join('\n')}`);
rmSync(prefixStore.dir, { recursive: true, force: true });
await backend.close();
