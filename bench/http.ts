/**
 * HTTP backend benchmark, side by side in one run:
 * (a) scoring throughput (probe items per second) at concurrency 1, 4 and 16: the
 *     in-process ONNX backend vs the HTTP backend against `probe serve` (a separate
 *     process, the same checkpoint);
 * (b) client overhead per request: the HTTP backend against a stub server on loopback that
 *     answers a well-formed echo instantly (tokenising, JSON, HTTP, checking — no model).
 * Usage: npx tsx bench/http.ts [--ckpt NAME]
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { HttpBackend } from '../src/backends/http/backend.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { CompletionBackend, ScoreRequest } from '../src/backends/types.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { mapLimit } from '../src/util/pool.ts';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const ckpt = join(EMBEDDED_CHECKPOINTS, arg('--ckpt', 'attn-agent'));
const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'));
const requests: ScoreRequest[] = items.map((i) => ({ context: i.context, continuations: [i.gold] }));

async function throughput(backend: CompletionBackend, concurrency: number): Promise<number> {
  await backend.score([requests[0]!]); // warm
  const started = performance.now();
  await mapLimit(requests, concurrency, (r) => backend.score([r]));
  return requests.length / ((performance.now() - started) / 1000);
}

// probe serve in its own process, as a team would run it.
const serve = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'probe.js'), 'serve', '--ckpt', ckpt, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
let said = '';
serve.stderr!.on('data', (d) => { said += String(d); });
while (!/at (http:\/\/\S+)/.test(said)) await new Promise((r) => setTimeout(r, 50));
const url = /at (http:\/\/\S+)/.exec(said)![1]!;

const local = await OnnxBackend.open(ckpt);
const remote = await HttpBackend.open(url, { tokenizerDir: ckpt, endpoint: { concurrency: 16 } });
console.log(`HTTP bench: ${arg('--ckpt', 'attn-agent')}, ${requests.length} probe items (context + gold), probe serve at ${url}\n`);
console.log('(a) scoring throughput, items/s');
for (const concurrency of [1, 4, 16]) {
  const [inProcess, http] = [await throughput(local, concurrency), await throughput(remote, concurrency)];
  console.log(`    concurrency ${String(concurrency).padStart(2)}: in-process ${inProcess.toFixed(1)}, HTTP ${http.toFixed(1)} (${(http / inProcess).toFixed(2)}× in-process)`);
}
const health = await (await fetch(`${url.replace(/\/v1$/, '')}/health`)).json() as { batches: number; batched_requests: number; largest_batch: number };
console.log(`    probe serve batched ${health.batched_requests} scoring requests into ${health.batches} forward passes (largest batch ${health.largest_batch})`);
serve.kill('SIGINT');

// A stub that answers any echo request at once, so only the client's own work is timed.
const stub = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { prompt: number[] };
    const n = body.prompt.length + 1;
    const answer = { choices: [{ index: 0, text: '', finish_reason: 'length', logprobs: { tokens: new Array(n).fill('x'), token_logprobs: [null, ...new Array(n - 1).fill(-1)], top_logprobs: [null, ...new Array(n - 1).fill({ x: -1 })], text_offset: new Array(n).fill(0) } }] };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
});
await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
const stubBackend = await HttpBackend.open(`http://127.0.0.1:${(stub.address() as AddressInfo).port}/v1`, { kind: 'openai', model: 'stub', tokenizerDir: ckpt });
const tokenizeOnly = performance.now();
for (const r of requests) local.encode(r.context.trimEnd() + r.continuations[0]);
const tokenizeMs = (performance.now() - tokenizeOnly) / requests.length;
await stubBackend.score([requests[0]!]);
const rounds = 5;
const started = performance.now();
for (let i = 0; i < rounds; i++) for (const r of requests) await stubBackend.score([r]);
const perRequest = (performance.now() - started) / (rounds * requests.length);
console.log(`\n(b) client overhead per request (stub server, concurrency 1): ${perRequest.toFixed(2)} ms, of which tokenising context + gold ${tokenizeMs.toFixed(2)} ms`);
stub.close();
await local.close();
