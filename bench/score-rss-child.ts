/** Child process of bench/score.ts: scores one 16K-token context and reports its peak RSS. */
import { OnnxBackend } from '../src/backends/onnx/backend.ts';

const [dir, mode, chunk] = process.argv.slice(2) as [string, string, string | undefined];
const backend = await OnnxBackend.open(dir, chunk ? { chunkSize: Number(chunk) } : {});
const unit = 'The parser reads the configuration file and returns the settings. ';
const target = 16_384;
const perUnit = backend.encode(unit.repeat(64)).length / 64;
const context = unit.repeat(Math.ceil(target / perUnit));
const tokens = backend.encode(context.trimEnd()).length;
const started = performance.now();
if (mode === 'score') await backend.score([{ context, continuations: [' It also validates every field.'] }]);
const ms = performance.now() - started;
const peakRssMb = process.resourceUsage().maxRSS / 1024;
await backend.close();
console.log(JSON.stringify({ tokens, vocab: 32_000, peakRssMb, ms }));
