/**
 * The demo's wall time as a new user meets it: `probe demo` with an empty result cache (cold),
 * then again with the cache it filled (warm), each in a fresh run directory, timed from outside
 * the process (start-up included) with the time of each stage the demo reports (`--json`'s
 * `stages`) and peak RSS (where /usr/bin/time exists). Prints the machine it ran on, and the
 * load average before each run: on a shared machine a busy neighbour shows there.
 * Usage: npx tsx bench/demo.ts [--warm-runs N]   (about 6 minutes on 2 idle cores)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/embedded.ts';

const warmRuns = process.argv.includes('--warm-runs') ? Number(process.argv[process.argv.indexOf('--warm-runs') + 1]) : 1;
const scratch = mkdtempSync(join(tmpdir(), 'probe-bench-demo-'));
const cache = join(scratch, 'cache');
const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

interface DemoRun {
  label: string;
  wallS: number;
  rssMiB: number | null;
  load: number;
  stages: Array<{ stage: string; seconds: number }>;
  table: string;
}

function runDemo(label: string, index: number): DemoRun {
  const out = join(scratch, `demo-${index}`);
  const rssFile = join(scratch, `rss-${index}`);
  const argv = [process.execPath, join(REPO_ROOT, 'bin', 'probe.js'), 'demo', '--out', out, '--json'];
  const load = loadavg()[0]!;
  const started = performance.now();
  const run = spawnSync(timeBin ?? argv[0]!, timeBin ? ['-f', '%M', '-o', rssFile, ...argv] : argv.slice(1), {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, PROBE_CACHE_DIR: cache },
    maxBuffer: 1 << 28,
  });
  const wallS = (performance.now() - started) / 1000;
  if (run.status !== 0) throw new Error(`probe demo (${label}) exited ${run.status}: ${run.stderr.slice(-2000)}`);
  const doc = JSON.parse(run.stdout) as {
    stages: DemoRun['stages'];
    results: Array<{ checkpoint: string; pass_at: Record<string, number> | null; shortlisted: boolean }>;
    shortlist: string[];
  };
  const rssKiB = timeBin ? Number(readFileSync(rssFile, 'utf8').trim().split('\n').pop()) : Number.NaN;
  const table = doc.results.map((r) => `${r.checkpoint.split('/').pop()} ${r.pass_at?.['1']?.toFixed(3) ?? '-'}`).join(', ');
  return {
    label,
    wallS,
    rssMiB: Number.isFinite(rssKiB) ? rssKiB / 1024 : null,
    load,
    stages: doc.stages,
    table: `${table}; shortlist ${doc.shortlist.join(', ')}`,
  };
}

const cpu = cpus();
console.log(
  `machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}; cache ${cache}`,
);
const runs = [runDemo('cold (empty cache)', 0)];
for (let i = 1; i <= warmRuns; i++) runs.push(runDemo('warm', i));
const stageNames = [...new Set(runs.flatMap((r) => r.stages.map((s) => s.stage)))];
const header = ['run', 'wall', ...stageNames, 'peak RSS', 'load before'];
const rows = runs.map((r) => [
  r.label,
  `${(r.wallS / 60).toFixed(2)} min`,
  ...stageNames.map((name) => {
    const s = r.stages.find((x) => x.stage === name);
    return s ? `${s.seconds.toFixed(1)} s` : '-';
  }),
  r.rssMiB === null ? '-' : `${r.rssMiB.toFixed(0)} MiB`,
  r.load.toFixed(2),
]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
for (const row of [header, widths.map((w) => '-'.repeat(w)), ...rows]) console.log(row.map((c, i) => c.padEnd(widths[i]!)).join('  '));
// The warm run answers every model call from the cache: its table must be the cold run's, digit for digit.
for (const r of runs.slice(1)) console.log(`${r.label} table ${r.table === runs[0]!.table ? 'equals' : 'DIFFERS FROM'} the cold run's`);
console.log(`pass@1 per checkpoint (cold): ${runs[0]!.table}`);
rmSync(scratch, { recursive: true, force: true });
