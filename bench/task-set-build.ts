/**
 * A task set sharing one base, built as probe builds it (issue 38): N tasks in the style of a
 * public generated Harbor 2.0 set, each `environment/Dockerfile`
 *
 *   FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624
 *   WORKDIR /app
 *   ENV SET_NONCE=<nonce>                 (one per invocation: see below)
 *   RUN pip install probe-pinned==1.0.0   (these lines are the layers the tasks share)
 *   COPY data-<i>.csv /app/
 *   RUN wc -l /app/data-<i>.csv > /app/rows
 *
 * with task.toml, instruction.md, tests/test.sh and solution/solve.sh beside it. The base
 * image is served by Debian's docker-registry on loopback (probe-base:bookworm's bytes
 * pushed under ghcr.io's path) and pulled through it as `--registry-mirror ghcr.io=…` would;
 * pip's index is the fixture index on loopback (probe-pinned 1.0.0 and 2.0.0), every request
 * counted. (Both are the test helpers, test/helpers/registry.ts and package-index.ts,
 * imported from here rather than copied.)
 *
 * Cold: the ghcr name is untagged, so the first task pulls it through the mirror, and every
 * image is new: the nonce is in each task's data file (new task images) and in the ENV line
 * before pip's step (the same for every task of one invocation, so the tasks share the pip
 * layer with each other but not with an earlier invocation's). Each task is built in order
 * with `terminalImage` (what `probe asap --env terminal` and `probe task check` call), timed.
 * Per task: the index's requests while it built, and where its pip layer came from: `built`
 * (a layer no earlier task had) or `cache` (the same layer id as an earlier task's: the
 * builder's cache). The shared pip layer should be built once: the index sees one install's
 * requests, not N.
 * Warm: the same tasks again in a fresh process (terminalImage memoizes per process, so each
 * phase is a child process of this one): probe finds every image by its content hash.
 * The mirror pull is timed from the engine's pull stream (the client's `pull` wrapped in the
 * cold child). Then the bench's tags are removed (the builder's cache of dangling layers goes
 * with them), and the registry and the index are stopped.
 * Usage: npx tsx bench/task-set-build.ts [--tasks 20]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Readable } from 'node:stream';
import { BASE_IMAGE, client } from '../src/sandbox/docker.ts';
import { DEFAULT_IMAGE_SOURCES, type ImageSources } from '../src/settings/image-sources.ts';
import { terminalImage } from '../src/terminal/image.ts';
import { loadTerminalTask } from '../src/terminal/task.ts';
import { serveIndex } from '../test/helpers/package-index.ts';
import { startRegistry, untag } from '../test/helpers/registry.ts';

const T_BENCH = 'ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624';
const T_BENCH_PATH = 'laude-institute/t-bench/ubuntu-24-04:20250624';

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** What a phase's child prints, one JSON line per task, then one line of totals. */
interface TaskLine {
  kind: 'task';
  task: string;
  seconds: number;
  tag: string;
  /** The task image's own tag (probe-terminal:task-…), under the sandbox layer. */
  taskTag?: string;
  /** Where the base came from: `pulled` (through the mirror) or `local`. */
  base: string;
  /** The id of the layer `RUN pip install …` made (the legacy builder keeps each step's image). */
  pipLayer?: string;
}
interface DoneLine {
  kind: 'done';
  /** Seconds of the engine's pull stream, when the phase pulled. */
  pullSeconds?: number;
}

// ---- a phase, in a child process -------------------------------------------------------

async function phase(root: string, mirror: string, indexUrl: string): Promise<void> {
  const docker = client();
  // The pull's own time: the engine's stream, from the request to its end (registry.ts reads it to the end).
  let pullSeconds: number | undefined;
  const pull = docker.pull.bind(docker) as unknown as (ref: string) => Promise<Readable>;
  (docker as unknown as { pull: (ref: string) => Promise<Readable> }).pull = async (ref: string) => {
    const started = performance.now();
    const stream = await pull(ref);
    stream.once('end', () => {
      pullSeconds = (pullSeconds ?? 0) + (performance.now() - started) / 1000;
    });
    return stream;
  };
  const sources: ImageSources = {
    ...DEFAULT_IMAGE_SOURCES,
    registry: { pull: 'missing', mirrors: new Map([['ghcr.io', mirror]]) },
    egress: { ...DEFAULT_IMAGE_SOURCES.egress, pipIndexUrl: indexUrl },
  };
  for (const name of readdirSync(root).sort()) {
    const task = loadTerminalTask(join(root, name));
    const started = performance.now();
    const image = await terminalImage(docker, task, sources);
    const seconds = (performance.now() - started) / 1000;
    const history = (await docker.getImage(image.tag).history()) as Array<{ Id: string; CreatedBy: string; Tags: string[] | null }>;
    const line: TaskLine = {
      kind: 'task',
      task: task.id,
      seconds,
      tag: image.tag,
      taskTag: history.flatMap((h) => h.Tags ?? []).find((t) => t.startsWith('probe-terminal:task-')),
      base: image.bases.map((b) => b.origin).join(',') || `stand-in (${image.notes.join('; ')})`,
      pipLayer: history.find((h) => h.CreatedBy.includes('pip install probe-pinned'))?.Id,
    };
    console.log(JSON.stringify(line));
  }
  console.log(JSON.stringify({ kind: 'done', pullSeconds } satisfies DoneLine));
}

// ---- the bench ---------------------------------------------------------------------------

/** One task of the set: the shared lines, a data file of its own, and a step of its own. */
function writeTask(root: string, i: number, nonce: string): void {
  const id = `task-${String(i).padStart(2, '0')}`;
  const dir = join(root, id);
  mkdirSync(join(dir, 'environment'), { recursive: true });
  mkdirSync(join(dir, 'tests'));
  mkdirSync(join(dir, 'solution'));
  writeFileSync(
    join(dir, 'task.toml'),
    'version = "1.0"\n[metadata]\ndifficulty = "easy"\ncategory = "data-processing"\n[agent]\ntimeout_sec = 300\n[verifier]\ntimeout_sec = 120\n[environment]\nbuild_timeout_sec = 600\n',
  );
  writeFileSync(
    join(dir, 'instruction.md'),
    `Write the number of data rows of /app/data-${i}.csv (without its header) to /app/count.txt.\n`,
  );
  writeFileSync(
    join(dir, 'environment', 'Dockerfile'),
    [
      `FROM ${T_BENCH}`,
      'WORKDIR /app',
      `ENV SET_NONCE=${nonce}`,
      'RUN pip install probe-pinned==1.0.0',
      `COPY data-${i}.csv /app/`,
      `RUN wc -l /app/data-${i}.csv > /app/rows`,
      '',
    ].join('\n'),
  );
  const rows = Array.from({ length: 3 + i }, (_, r) => `${r},${(r * 7 + i) % 13},${nonce}`);
  writeFileSync(join(dir, 'environment', `data-${i}.csv`), `id,value,nonce\n${rows.join('\n')}\n`);
  writeFileSync(
    join(dir, 'tests', 'test.sh'),
    [
      '#!/bin/bash',
      'mkdir -p /logs/verifier',
      `python3 -c "import probe_pinned; assert probe_pinned.VERSION == '1.0.0'" || { echo 0 > /logs/verifier/reward.txt; exit 0; }`,
      `if [ "$(cat /app/count.txt)" = ${rows.length} ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi`,
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  writeFileSync(join(dir, 'solution', 'solve.sh'), `#!/bin/bash\ntail -n +2 /app/data-${i}.csv | wc -l | tr -d " " > /app/count.txt\n`, {
    mode: 0o755,
  });
}

/** Runs one phase in a child process; `onTask` sees each task's line as it arrives (while the index's count is that task's). */
async function runPhase(name: string, root: string, mirror: string, indexUrl: string, onTask: (line: TaskLine) => void): Promise<DoneLine> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), '--phase', name, '--root', root, '--mirror', mirror, '--index', indexUrl],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  let done: DoneLine | undefined;
  for await (const text of createInterface({ input: child.stdout })) {
    const line = JSON.parse(text) as TaskLine | DoneLine;
    if (line.kind === 'task') onTask(line);
    else done = line;
  }
  const code = await exited;
  if (code !== 0 || !done) throw new Error(`the ${name} phase exited with ${code}`);
  return done;
}

async function bench(n: number): Promise<void> {
  const nonce = randomUUID();
  const root = mkdtempSync(join(tmpdir(), 'probe-bench-task-set-'));
  for (let i = 1; i <= n; i++) writeTask(root, i, nonce);
  console.log(
    `${n} tasks FROM ${T_BENCH}, shared: WORKDIR, ENV SET_NONCE=${nonce.slice(0, 8)}…, RUN pip install probe-pinned==1.0.0; ` +
      `${availableParallelism()} × ${cpus()[0]?.model.trim()}, load average ${loadavg()[0]!.toFixed(2)} before the run`,
  );
  const registry = await startRegistry();
  const index = await serveIndex();
  const tags = new Set<string>();
  try {
    let started = performance.now();
    registry.push(BASE_IMAGE, T_BENCH_PATH);
    console.log(
      `${BASE_IMAGE} pushed to the loopback registry as ${registry.host}/${T_BENCH_PATH} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    // Cold: the first task pulls the base through the mirror.
    untag(T_BENCH, `${registry.host}/${T_BENCH_PATH}`);

    const cold: Array<TaskLine & { hits: number }> = [];
    let seen = index.hits.length;
    started = performance.now();
    const coldDone = await runPhase('cold', root, registry.host, index.url, (line) => {
      cold.push({ ...line, hits: index.hits.length - seen });
      seen = index.hits.length;
      tags.add(line.tag);
      if (line.taskTag) tags.add(line.taskTag);
    });
    const coldWall = (performance.now() - started) / 1000;
    const warm: TaskLine[] = [];
    started = performance.now();
    await runPhase('warm', root, registry.host, index.url, (line) => warm.push(line));
    const warmWall = (performance.now() - started) / 1000;

    // Where each task's pip layer came from: the first task to have a layer id built it, the later ones had it from the cache.
    const layers = new Set<string>();
    const origin = cold.map((row) => {
      if (!row.pipLayer) return 'none';
      const cached = layers.has(row.pipLayer);
      layers.add(row.pipLayer);
      return cached ? 'cache' : 'built';
    });
    console.log('\n| task | cold s | warm s | base (cold) | pip layer (cold) | index requests (cold) | same image warm |');
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    cold.forEach((row, i) => {
      const w = warm.find((x) => x.task === row.task);
      console.log(
        `| ${row.task} | ${row.seconds.toFixed(2)} | ${w ? w.seconds.toFixed(3) : '—'} | ${row.base} | ${origin[i]} | ${row.hits} | ${w?.tag === row.tag ? 'yes' : 'NO'} |`,
      );
    });
    const first = cold[0]!.seconds;
    const others = cold.slice(1).map((row) => row.seconds);
    const otherMedian = median(others);
    const warmMedian = median(warm.map((row) => row.seconds));
    console.log('');
    console.log(`mirror pull (the first task's, ${registry.host} for ghcr.io): ${coldDone.pullSeconds?.toFixed(2) ?? 'none'} s`);
    console.log(`first task cold: ${first.toFixed(2)} s (the pull, the shared pip layer and its own layers)`);
    console.log(
      `other tasks cold: median ${otherMedian.toFixed(2)} s (min ${Math.min(...others).toFixed(2)}, max ${Math.max(...others).toFixed(2)}); ` +
        `pip layer from the builder's cache in ${origin.slice(1).filter((o) => o === 'cache').length} of ${others.length}`,
    );
    console.log(`warm: median ${warmMedian.toFixed(3)} s per task (every image found by its content hash)`);
    console.log(`first cold / median other cold: ${(first / otherMedian).toFixed(2)}×`);
    console.log(
      `index requests: ${index.hits.length} in all over ${n} tasks (${cold.filter((row) => row.hits > 0).length} task(s) asked it anything): ${[...new Set(index.hits)].join(', ')}`,
    );
    console.log(`wall: cold phase ${coldWall.toFixed(1)} s, warm phase ${warmWall.toFixed(1)} s (each a fresh process)`);
  } finally {
    // The bench's images: each task's sandbox layer and task image, and the base's names the pull made.
    untag(...tags, T_BENCH, `${registry.host}/${T_BENCH_PATH}`);
    await index.close();
    await registry.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

const phaseName = arg('--phase', '');
if (phaseName) await phase(arg('--root', ''), arg('--mirror', ''), arg('--index', ''));
else await bench(Number(arg('--tasks', '20')));
