/**
 * The log-softmax of a chunk of scoring rows three ways, side by side: float64 JS
 * (`logSoftmaxAt`, the reference), and onnxruntime in 'double' and 'mixed' precision
 * (log-softmax.ts). Prints ms per chunk and the largest per-token disagreement with the
 * reference, on logits drawn at a real model's scale.
 * Usage: npx tsx bench/log-softmax.ts [--reps N]
 */
import { logSoftmaxAt } from '../src/backends/logits.ts';
import { LogSoftmaxSession, type LogSoftmaxPrecision } from '../src/backends/onnx/log-softmax.ts';
import { createRng } from '../src/util/rng.ts';

const reps = Number(process.argv[process.argv.indexOf('--reps') + 1]) || 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = 128;
for (const vocab of [8192, 32_000, 151_936]) {
  const rng = createRng('bench-log-softmax', 1, vocab);
  const logits = new Float32Array(rows * vocab);
  // Roughly Gaussian logits with sd 3 and a few peaked rows, like a trained LM head.
  for (let i = 0; i < logits.length; i++) logits[i] = (rng.next() + rng.next() + rng.next() - 1.5) * 6;
  for (let r = 0; r < rows; r += 4) logits[r * vocab + Math.floor(rng.next() * vocab)] = 25;
  const targets = Array.from({ length: rows }, () => Math.floor(rng.next() * vocab));
  const js = () => targets.map((t, r) => logSoftmaxAt(logits, r * vocab, vocab, t));
  const ref = js();
  const line = [`vocab ${vocab}, ${rows} rows:`];
  const jsMs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    js();
    jsMs.push(performance.now() - t);
  }
  line.push(`JS float64 ${median(jsMs).toFixed(1)} ms`);
  for (const precision of ['double', 'mixed'] as LogSoftmaxPrecision[]) {
    const session = await LogSoftmaxSession.create(precision);
    const out = await session.score(logits, 0, vocab, targets);
    const ms: number[] = [];
    for (let i = 0; i < reps; i++) {
      const t = performance.now();
      await session.score(logits, 0, vocab, targets);
      ms.push(performance.now() - t);
    }
    let worst = 0;
    let sameArgmax = true;
    ref.forEach((r, i) => {
      worst = Math.max(worst, Math.abs(r.logprob - out.logprob[i]!), Math.abs(r.argmaxLogprob - out.argmaxLogprob[i]!));
      sameArgmax &&= r.argmax === out.argmax[i];
    });
    line.push(
      `ort ${precision} ${median(ms).toFixed(1)} ms (max |Δ| ${worst.toExponential(1)} nats, argmax ${sameArgmax ? 'identical' : 'DIFFERS'})`,
    );
    await session.close();
  }
  console.log(line.join(' · '));
}
