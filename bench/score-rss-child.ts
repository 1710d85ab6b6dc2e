/** Child process of bench/score.ts: scores one context of about `tokens` tokens and reports its peak RSS. */
import { OnnxBackend } from '../src/backends/onnx/backend.ts';

const [dir, mode, target] = process.argv.slice(2) as [string, 'load-only' | 'score', string];
const backend = await OnnxBackend.open(dir);
const unit = 'def parse(path):\n    with open(path) as f:\n        return [line.split("=") for line in f]\n';
const perUnit = backend.encode(unit.repeat(64)).length / 64;
// Room for the continuation inside the checkpoint's window.
const context = unit.repeat(Math.floor(Math.min(Number(target), backend.window - 32) / perUnit));
const tokens = backend.encode(context.trimEnd()).length;
const started = performance.now();
if (mode === 'score') await backend.score([{ context, continuations: ['\n    # It also validates every field.'] }]);
const ms = performance.now() - started;
const peakRssMb = process.resourceUsage().maxRSS / 1024;
await backend.close();
console.log(JSON.stringify({ tokens, peakRssMb, ms }));
