/**
 * Child process of bench/hf.ts: opens one checkpoint directory in process, scores the one
 * { context, continuation } of a JSON file, and reports its peak RSS, the open's and the
 * score's milliseconds and the tokens fed. Peak RSS is VmHWM of /proc/self/status, this
 * process's own peak since exec: `process.resourceUsage().maxRSS` (getrusage) also holds
 * the RSS of the process it was forked from at the fork, which Linux keeps across exec, so
 * it is only reported (maxrssMb).
 * Usage: node --import tsx bench/hf-rss-child.ts DIR ITEM.json
 */
import { readFileSync } from 'node:fs';
import { splitPair } from '../src/backends/boundary.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';

const [dir, itemFile] = process.argv.slice(2) as [string, string];
const item = JSON.parse(readFileSync(itemFile, 'utf8')) as { context: string; continuation: string };
let started = performance.now();
const backend = await OnnxBackend.open(dir);
const loadMs = performance.now() - started;
started = performance.now();
await backend.score([{ context: item.context, continuations: [item.continuation] }]);
const ms = performance.now() - started;
const hwm = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!;
const peakRssMb = Number(hwm) / 1024;
const maxrssMb = process.resourceUsage().maxRSS / 1024;
const pair = splitPair(item.context, item.continuation, (t) => backend.encode(t));
await backend.close();
console.log(JSON.stringify({ peakRssMb, maxrssMb, tokens: pair.contextTokens.length + pair.continuationTokens.length, loadMs, ms }));
