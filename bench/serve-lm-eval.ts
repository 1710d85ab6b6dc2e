/**
 * lm-evaluation-harness through `probe serve` vs lm-evaluation-harness's own `hf` model (torch,
 * fp32, CPU) on the same items and checkpoint, side by side in one run: the shipped demo's
 * decisive actions that fit the checkpoint's window, as a loglikelihood task and a
 * generate_until task (test/fixtures/serve-clients/lm-eval-tasks), A and B alternating.
 * Prints each round's wall time of lm-eval's `simple_evaluate` (model load included), the
 * medians and their ratio, and how far the two models' log-likelihoods and generations agree.
 *
 * Needs python3 with lm-eval 0.4.13 and torch (the local index's CPU wheel). Usage:
 *   npx tsx bench/serve-lm-eval.ts [--ckpt DIR] [--rounds 3] [--batch 8]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/embedded.ts';
import { startProbeServe, stopProbeServe } from '../test/helpers/probe-serve.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const ckpt = arg('--ckpt', join(REPO_ROOT, '..', 'shared', 'models', 'hf', 'llama-bpe8k-s1500'));
const rounds = Number(arg('--rounds', '3'));
const batch = arg('--batch', '8');

// The demo's decisive actions under 1,000 tokens (context and gold), as the tasks read them.
const dir = mkdtempSync(join(tmpdir(), 'serve-lm-eval-'));
const items = join(dir, 'items.jsonl');
const rows = readFileSync(join(REPO_ROOT, 'probes', 'demo.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line) as { id: string; context: string; gold: string })
  .filter((r) => r.context.length + r.gold.length < 3200);
writeFileSync(items, rows.map(({ id, context, gold }) => JSON.stringify({ id, context, gold })).join('\n'));

const { url: serveUrl, server: serve } = await startProbeServe(ckpt);
const url = `${serveUrl}/completions`;

interface Run {
  wall_s: number;
  answers: { probe_decisive: Record<string, [number, boolean]>; probe_generate: Record<string, string> };
}
function lmEval(kind: 'hf' | 'local-completions'): Run {
  const run = spawnSync('python3', [join(REPO_ROOT, 'bench', 'lm_eval_models.py'), kind, ckpt, items, batch, url], {
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  if (run.status !== 0) throw new Error(`lm-eval ${kind} failed:\n${run.stderr.slice(-2000)}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Run;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const walls = { served: [] as number[], hf: [] as number[] };
let last: { served: Run; hf: Run } | undefined;
try {
  console.log(`${rows.length} items, batch ${batch}, ${ckpt}`);
  for (let round = 0; round < rounds; round++) {
    // A then B, B then A: neither always runs on a warmer machine.
    const order: Array<'served' | 'hf'> = round % 2 === 0 ? ['served', 'hf'] : ['hf', 'served'];
    const got = {} as { served: Run; hf: Run };
    for (const side of order) got[side] = lmEval(side === 'hf' ? 'hf' : 'local-completions');
    walls.served.push(got.served.wall_s);
    walls.hf.push(got.hf.wall_s);
    console.log(`round ${round + 1}: through probe serve ${got.served.wall_s.toFixed(1)} s, hf ${got.hf.wall_s.toFixed(1)} s`);
    last = got;
  }
} finally {
  await stopProbeServe(serve);
}
const served = median(walls.served);
const hf = median(walls.hf);
console.log(`median: through probe serve ${served.toFixed(1)} s, hf ${hf.toFixed(1)} s; hf / probe serve = ${(hf / served).toFixed(2)}×`);
const ll = Object.keys(last!.hf.answers.probe_decisive).map((id) =>
  Math.abs(last!.hf.answers.probe_decisive[id]![0] - last!.served.answers.probe_decisive[id]![0]),
);
const same = Object.keys(last!.hf.answers.probe_generate).filter(
  (id) => last!.hf.answers.probe_generate[id] === last!.served.answers.probe_generate[id],
).length;
console.log(
  `agreement: log-likelihoods max |Δ| ${Math.max(...ll).toExponential(2)} nats over ${ll.length} items; greedy generations identical ${same}/${ll.length}`,
);
