/**
 * Regenerates the embedded checkpoint ladder under `checkpoints/` from `ladder-text/`.
 * Usage: npm run gen:checkpoints [-- --out DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildRung, EXPECTED_ORDER, LADDER, loadLadderTexts } from './checkpoints/ladder.ts';
import { REAL_RUNGS } from './checkpoints/real-rungs.ts';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outFlag = process.argv.indexOf('--out');
const out = outFlag >= 0 ? resolve(process.argv[outFlag + 1]!) : join(repo, 'checkpoints');

const texts = loadLadderTexts(join(repo, 'ladder-text'));
for (const spec of LADDER) {
  const started = Date.now();
  const files = buildRung(spec, texts);
  for (const [rel, data] of files) {
    const path = join(out, spec.name, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, data);
  }
  const size = [...files.values()].reduce((a, d) => a + (typeof d === 'string' ? Buffer.byteLength(d) : d.byteLength), 0);
  console.error(`${spec.name}: ${(size / 1024).toFixed(0)} KiB in ${Date.now() - started} ms`);
}
// The real rungs (scripts/import-real-checkpoints.ts) sit before the control, which is last.
const built = LADDER.map(({ name, family, corpora: c, description, contaminated }) => ({
  name,
  family,
  corpora: c,
  description,
  ...(contaminated ? { control: true, contaminated } : {}),
}));
const real = REAL_RUNGS.map((r) => ({
  name: r.name,
  family: 'llama',
  corpora: ['real-python'],
  description: r.description,
  heldout_code_bpb: r.heldoutCodeBpb,
}));
writeFileSync(
  join(out, 'ladder.json'),
  `${JSON.stringify(
    {
      rungs: [...built.filter((r) => !('control' in r)), ...real, ...built.filter((r) => 'control' in r)],
      expected_order: EXPECTED_ORDER,
      known_order: [...REAL_RUNGS].sort((a, b) => a.heldoutCodeBpb - b.heldoutCodeBpb).map((r) => r.name),
    },
    null,
    2,
  )}\n`,
);
