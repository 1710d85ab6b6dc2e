/**
 * Run store and cache, side by side in one run: BPB of the attention checkpoint over the
 * demo probes (a) plain, (b) writing every item to a run directory, (c) resuming a finished
 * run directory (everything read back), (d) a fresh run directory over a warm cache.
 * Usage: npx tsx bench/store.ts
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CachedBackend, checkpointContentHash, ResultCache } from '../src/backends/cache.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { scoreBpb, type BpbItem } from '../src/probes/bpb.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { checkpointRecords, probeSetRecord, RunDir } from '../src/store/run-dir.ts';
import { resolveCheckpoint } from '../src/backends/checkpoint.ts';

const ckpt = join(EMBEDDED_CHECKPOINTS, 'attn-agent');
const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'));
const backend = await OnnxBackend.open(ckpt);
const cache = new ResultCache(mkdtempSync(join(tmpdir(), 'probe-bench-cache-')));
const cached = new CachedBackend(backend, cache, checkpointContentHash(ckpt));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const newRun = () =>
  RunDir.open(
    mkdtempSync(join(tmpdir(), 'probe-bench-run-')),
    {
      verb: 'bpb',
      config: {},
      checkpoints: checkpointRecords([resolveCheckpoint(ckpt)]),
      probe_set: probeSetRecord('demo', items),
      seeds: {},
    },
    { resume: false },
  );

await scoreBpb(ckpt, backend, items); // warm-up
await scoreBpb(ckpt, cached, items); // fills the cache
const times = { plain: [] as number[], store: [] as number[], inStore: [] as number[], resumed: [] as number[], cache: [] as number[] };
for (let r = 0; r < 9; r++) {
  // Plain and stored runs alternate which goes first, so drift on a shared machine hits both alike.
  const run = newRun();
  const plainRun = async () => {
    const t0 = performance.now();
    await scoreBpb(ckpt, backend, items);
    times.plain.push(performance.now() - t0);
  };
  // The store's own time, measured inside its calls: the difference of two whole runs is mostly machine noise.
  const memo = run.memo<BpbItem>('bpb', ckpt);
  let inStore = 0;
  const timed = <T>(f: () => T): T => {
    const t0 = performance.now();
    try {
      return f();
    } finally {
      inStore += performance.now() - t0;
    }
  };
  const storedRun = async () => {
    const t0 = performance.now();
    await scoreBpb(ckpt, backend, items, {
      memo: { get: (id) => timed(() => memo.get(id)), put: (id, v) => timed(() => memo.put(id, v)) },
    });
    times.store.push(performance.now() - t0);
    times.inStore.push(inStore);
  };
  if (r % 2) {
    await plainRun();
    await storedRun();
  } else {
    await storedRun();
    await plainRun();
  }
  let t = performance.now();
  const again = RunDir.open(
    run.dir,
    {
      verb: 'bpb',
      config: {},
      checkpoints: checkpointRecords([resolveCheckpoint(ckpt)]),
      probe_set: probeSetRecord('demo', items),
      seeds: {},
    },
    { resume: true },
  );
  await scoreBpb(ckpt, backend, items, { memo: again.memo<BpbItem>('bpb', ckpt) });
  times.resumed.push(performance.now() - t);
  const fresh = newRun();
  t = performance.now();
  await scoreBpb(ckpt, cached, items, { memo: fresh.memo<BpbItem>('bpb', ckpt) });
  times.cache.push(performance.now() - t);
}
const plain = median(times.plain);
console.log(`attn-agent, ${items.length} demo probes, median of 9:`);
console.log(`  plain                        ${plain.toFixed(0)} ms`);
console.log(
  `  + run directory              ${median(times.store).toFixed(0)} ms  (whole runs: ${(median(times.store) / plain).toFixed(3)}× plain)`,
);
console.log(
  `    of which in the store      ${median(times.inStore).toFixed(2)} ms  (${((100 * median(times.inStore)) / plain).toFixed(2)}% of plain: ${items.length} lookups + ${items.length} appended lines)`,
);
console.log(
  `  resumed, all items finished  ${median(times.resumed).toFixed(1)} ms  (${(plain / median(times.resumed)).toFixed(0)}× faster than computing; includes checking run.json and hashing the checkpoint)`,
);
console.log(
  `  new run, warm cache          ${median(times.cache).toFixed(1)} ms  (${(plain / median(times.cache)).toFixed(0)}× faster; cache ${cache.stats.hits} hits, ${cache.stats.misses} misses)`,
);
await backend.close();
