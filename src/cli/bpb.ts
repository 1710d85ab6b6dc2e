/** `probe bpb`: Decisive-Action BPB of every checkpoint on a probe set. */
import { relative } from 'node:path';
import { Command } from 'commander';
import { positiveInteger } from './sandbox-options.ts';
import { checkCheckpoint, openBackend } from '../backends/open.ts';
import { InputError } from '../errors.ts';
import { embeddedCheckpointDirs, EMBEDDED_PROBES } from '../embedded.ts';
import { rankByBpb, scoreBpb, type BpbResult } from '../probes/bpb.ts';
import { loadProbeItems } from '../probes/load.ts';
import { createProgress } from '../report/progress.ts';
import { formatTable } from '../report/table.ts';


interface BpbOptions { ckpt?: string[]; probes?: string; json?: boolean; limit?: number }

export function bpbCommand(): Command {
  return new Command('bpb')
    .description('Bits per byte of each probe\'s gold decisive action given its context (lower is better).')
    .option('--ckpt <dir...>', 'checkpoint directories (transformers.js layout); default: the embedded ladder')
    .option('--probes <file|dir>', 'probe items (.jsonl file or a directory of them); default: the shipped demo probes')
    .option('--limit <n>', 'score only the first N probe items', positiveInteger)
    .option('--json', 'print one JSON document on stdout')
    .addHelpText('after', '\nExample:\n  probe bpb --ckpt checkpoints/ngram-prose checkpoints/ngram-agent --probes probes/ --json')
    .action(async (options: BpbOptions) => runBpbCommand(options));
}

async function runBpbCommand(options: BpbOptions): Promise<void> {
  const checkpoints = options.ckpt ?? embeddedCheckpointDirs().map((dir) => relative(process.cwd(), dir) || '.');
  // All input is checked before any work, so a typo never costs a finished result.
  let items = loadProbeItems(options.probes ?? EMBEDDED_PROBES);
  if (options.limit !== undefined) items = items.slice(0, options.limit);
  for (const ckpt of checkpoints) checkCheckpoint(ckpt);

  const progress = createProgress(checkpoints.length * items.length, !options.json);
  const results: BpbResult[] = [];
  const failures: InputError[] = [];
  for (const ckpt of checkpoints) {
    try {
      const backend = await openBackend(ckpt);
      try {
        results.push(await scoreBpb(ckpt, backend, items, () => progress.tick(ckpt)));
      } finally {
        await backend.close();
      }
    } catch (error) {
      if (!(error instanceof InputError)) { progress.stop(); throw error; }
      // One broken checkpoint must not discard the others' results: report it and go on.
      failures.push(error);
    }
  }
  progress.stop();

  const ranking = rankByBpb(results);
  if (options.json) {
    process.stdout.write(`${JSON.stringify({
      results: results.map((r) => ({ checkpoint: r.checkpoint, backend: r.backend, bpb: r.bpb, nats: r.nats, bytes: r.bytes, tokens: r.tokens,
        items: r.items.map((i) => ({ id: i.id, bpb: i.bpb, nats: i.nats, bytes: i.bytes, tokens: i.tokens, truncated: i.truncated, greedy: i.greedy })) })),
      ranking,
      ...(failures.length ? { errors: failures.map((f) => ({ file: f.location.file, field: f.location.field ?? null, message: f.message })) } : {}),
    }, null, 2)}\n`);
  } else if (results.length) {
    const byName = new Map(results.map((r) => [r.checkpoint, r]));
    const rows = ranking.map((name, i) => {
      const r = byName.get(name)!;
      const truncated = r.items.filter((it) => it.truncated).length;
      return [String(i + 1), name, r.bpb.toFixed(4), String(r.items.length), String(r.tokens), String(r.bytes), String(truncated)];
    });
    process.stderr.write(`\nDecisive-Action BPB on ${items.length} probe items (lower is better)\n\n`);
    process.stderr.write(`${formatTable(['rank', 'checkpoint', 'bpb', 'items', 'tokens', 'bytes', 'truncated'], rows, [0, 2, 3, 4, 5, 6])}\n`);
  }
  if (failures.length) {
    for (const f of failures) process.stderr.write(`probe: ${f.message}\n`);
    process.exitCode = 2;
  }
}
