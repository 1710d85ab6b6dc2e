/**
 * MCQ benchmark, side by side in one run: options scored with shared-context reuse (one
 * request, the context fed once) vs each option as its own request (the context re-run).
 * Usage: npx tsx bench/mcq.ts
 */
import { join } from 'node:path';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';

const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const name of ['attn-agent', 'ngram-agent']) {
  const backend = await OnnxBackend.open(join(EMBEDDED_CHECKPOINTS, name));
  const shared = async () => {
    for (const it of items) await backend.score([{ context: it.context, continuations: [it.gold, ...it.distractors] }]);
  };
  const separate = async () => {
    for (const it of items)
      for (const o of [it.gold, ...it.distractors]) await backend.score([{ context: it.context, continuations: [o] }]);
  };
  await shared();
  await separate();
  const s: number[] = [],
    p: number[] = [];
  for (let r = 0; r < 5; r++) {
    let t = performance.now();
    await shared();
    s.push(performance.now() - t);
    t = performance.now();
    await separate();
    p.push(performance.now() - t);
  }
  const options = items.reduce((a, it) => a + 1 + it.distractors.length, 0);
  console.log(
    `${name}: ${items.length} items, ${options} options — shared context ${median(s).toFixed(0)} ms, separately ${median(p).toFixed(0)} ms → ${(median(p) / median(s)).toFixed(2)}× faster with reuse`,
  );
  await backend.close();
}
