/**
 * HTTP backend benchmark, side by side in one run:
 * (a) scoring throughput (probe items per second) at concurrency 1, 4 and 16: the
 *     in-process ONNX backend vs the HTTP backend against `probe serve` (a separate
 *     process, the same checkpoint);
 * (b) `probe bpb` against that server at --http-concurrency 1 and 8 (the verb keeps that many
 *     items in flight; the server batches what arrives together);
 * (c) client overhead per request: the HTTP backend against a stub server on loopback that
 *     answers a well-formed echo instantly (tokenising, JSON, HTTP, checking — no model).
 * Usage: npx tsx bench/http.ts [--ckpt NAME]
 */
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { HttpBackend } from '../src/backends/http/backend.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { CompletionBackend, ScoreRequest } from '../src/backends/types.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { startProbeServe, stopProbeServe } from '../test/helpers/probe-serve.ts';
import { scoreBpb } from '../src/probes/bpb.ts';
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
const { url, server: serve } = await startProbeServe(ckpt);

const local = await OnnxBackend.open(ckpt);
const remote = await HttpBackend.open(url, { tokenizerDir: ckpt, endpoint: { concurrency: 16 } });
console.log(`HTTP bench: ${arg('--ckpt', 'attn-agent')}, ${requests.length} probe items (context + gold), probe serve at ${url}\n`);
console.log('(a) scoring throughput, items/s');
for (const concurrency of [1, 4, 16]) {
  const [inProcess, http] = [await throughput(local, concurrency), await throughput(remote, concurrency)];
  console.log(
    `    concurrency ${String(concurrency).padStart(2)}: in-process ${inProcess.toFixed(1)}, HTTP ${http.toFixed(1)} (${(http / inProcess).toFixed(2)}× in-process)`,
  );
}
const health = (await (await fetch(`${url.replace(/\/v1$/, '')}/health`)).json()) as {
  batches: number;
  batched_requests: number;
  largest_batch: number;
};
console.log(
  `    probe serve batched ${health.batched_requests} scoring requests into ${health.batches} forward passes (largest batch ${health.largest_batch})`,
);

// The verb end to end, result cache off so every item goes to the server.
const bpbVerb = (concurrency: number) => {
  const started = performance.now();
  const run = spawnSync(
    process.execPath,
    [
      join(REPO_ROOT, 'bin', 'probe.js'),
      'bpb',
      '--ckpt',
      url,
      '--tokenizer',
      ckpt,
      '--http-concurrency',
      String(concurrency),
      '--no-cache',
      '--json',
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`probe bpb failed: ${run.stderr}`);
  return {
    seconds: (performance.now() - started) / 1000,
    bpb: (JSON.parse(run.stdout) as { results: Array<{ bpb: number }> }).results[0]!.bpb,
  };
};
const [one, eight] = [bpbVerb(1), bpbVerb(8)];
// The same scoring without the process start (tsx compiling the CLI takes seconds of each run above).
const scoring = async (concurrency: number) => {
  const backend = await HttpBackend.open(url, { tokenizerDir: ckpt, endpoint: { concurrency } });
  const started = performance.now();
  await scoreBpb('bench', backend, items);
  return (performance.now() - started) / 1000;
};
const [scoreOne, scoreEight] = [await scoring(1), await scoring(8)];
console.log(
  `\n(b) probe bpb over HTTP, ${requests.length} items: --http-concurrency 1 ${one.seconds.toFixed(1)} s, 8 ${eight.seconds.toFixed(1)} s (${(one.seconds / eight.seconds).toFixed(2)}× faster; bpb ${one.bpb.toFixed(4)} and ${eight.bpb.toFixed(4)});` +
    `\n    its scoring alone (scoreBpb through the HTTP backend): ${scoreOne.toFixed(2)} s and ${scoreEight.toFixed(2)} s (${(scoreOne / scoreEight).toFixed(2)}×)`,
);
await stopProbeServe(serve);

// A stub that answers any echo request at once, so only the client's own work is timed.
const stub = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { prompt: number[] };
    const n = body.prompt.length + 1;
    const answer = {
      choices: [
        {
          index: 0,
          text: '',
          finish_reason: 'length',
          logprobs: {
            tokens: new Array(n).fill('x'),
            token_logprobs: [null, ...new Array(n - 1).fill(-1)],
            top_logprobs: [null, ...new Array(n - 1).fill({ x: -1 })],
            text_offset: new Array(n).fill(0),
          },
        },
      ],
    };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
});
await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
const stubBackend = await HttpBackend.open(`http://127.0.0.1:${(stub.address() as AddressInfo).port}/v1`, {
  kind: 'openai',
  model: 'stub',
  tokenizerDir: ckpt,
});
const tokenizeOnly = performance.now();
for (const r of requests) local.encode(r.context.trimEnd() + r.continuations[0]);
const tokenizeMs = (performance.now() - tokenizeOnly) / requests.length;
await stubBackend.score([requests[0]!]);
const rounds = 5;
const started = performance.now();
for (let i = 0; i < rounds; i++) for (const r of requests) await stubBackend.score([r]);
const perRequest = (performance.now() - started) / (rounds * requests.length);
console.log(
  `\n(c) client overhead per request (stub server, concurrency 1): ${perRequest.toFixed(2)} ms, of which tokenising context + gold ${tokenizeMs.toFixed(2)} ms`,
);
stub.close();
await local.close();
