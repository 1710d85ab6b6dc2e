/**
 * Regenerates test/fixtures/swebench/: the published SWE-bench row of pydicom__pydicom-1458
 * in the three forms datasets ship it — the JSON list SWE-agent's tests hold (FAIL_TO_PASS /
 * PASS_TO_PASS as lists), and Hugging Face's form (those two as JSON-encoded strings) as JSONL
 * and as Parquet — and the pydicom repository at the row's base commit as a depth-1 clone's
 * `.git` (a tar; the test image's /testbed is checked out from it), and the one pydicom-data
 * file the row's FAIL_TO_PASS tests read.
 *
 * Usage: npx tsx scripts/swebench-fixture.ts [--swe-agent GIT_DIR] [--pydicom GIT_DIR]
 * (defaults: the mirrors under /work/.mirror). Both sources are MIT-licensed; their licenses
 * are copied beside the files.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteFile } from 'hyparquet-writer';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'test', 'fixtures', 'swebench');
const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const sweAgent = arg('--swe-agent', '/work/.mirror/SWE-agent+SWE-agent/repo');
const pydicom = arg('--pydicom', '/work/.mirror/pydicom+pydicom/repo');
const git = (gitDir: string, ...args: string[]) => execFileSync('git', ['--git-dir', gitDir, ...args], { maxBuffer: 64 * 2 ** 20 });

const ID = 'pydicom__pydicom-1458';
const source = git(sweAgent, 'show', 'HEAD:tests/test_data/data_sources/swe-bench-dev-easy_first_only.json').toString('utf8');
writeFileSync(join(out, `${ID}.json`), source);
writeFileSync(join(out, 'LICENSE.SWE-agent'), git(sweAgent, 'show', 'HEAD:LICENSE'));

// Hugging Face's form: the same columns, the test lists JSON-encoded.
const [row] = JSON.parse(source) as Record<string, unknown>[];
const published = Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Array.isArray(v) ? JSON.stringify(v) : v]));
writeFileSync(join(out, `${ID}.jsonl`), `${JSON.stringify(published)}\n`);
parquetWriteFile({
  filename: join(out, `${ID}.parquet`),
  columnData: Object.entries(published).map(([name, value]) => ({ name, data: [value], type: 'STRING' as const })),
});

// The repository at the base commit: a depth-1 clone's .git, without index, hooks or logs (a checkout rebuilds them).
const commit = String(row!.base_commit);
const scratch = mkdtempSync(join(tmpdir(), 'pydicom-'));
try {
  execFileSync('git', ['init', '-q', scratch]);
  execFileSync('git', ['-C', scratch, 'fetch', '-q', '--depth', '1', resolve(pydicom), commit]);
  execFileSync('git', ['-C', scratch, 'update-ref', '--no-deref', 'HEAD', commit]);
  for (const extra of ['index', 'hooks', 'logs', 'info', 'description', 'FETCH_HEAD', 'branches'])
    rmSync(join(scratch, '.git', extra), { recursive: true, force: true });
  execFileSync('tar', [
    '-C',
    scratch,
    '--owner=0',
    '--group=0',
    '--numeric-owner',
    '--sort=name',
    '--mtime=@0',
    '-cf',
    join(out, 'pydicom-8da0b9b.git.tar'),
    '.git',
  ]);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
writeFileSync(join(out, 'LICENSE.pydicom'), git(pydicom, 'show', `${commit}:LICENSE`));
// The test file the row's second FAIL_TO_PASS test reads, which pydicom downloads from pydicom-data
// at run time (the sandbox has no network): the same bytes, from pydicom's history before it moved
// there (its sha256 is the one pydicom's data/hashes.json pins).
writeFileSync(join(out, 'SC_rgb.dcm'), git(pydicom, 'show', '926d30ed7279d34469bdecdde79c671c5fcf931d:pydicom/data/test_files/SC_rgb.dcm'));
console.error(`wrote ${ID}.json/.jsonl/.parquet and pydicom-8da0b9b.git.tar → ${out}`);
