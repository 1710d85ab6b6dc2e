/**
 * Replay benchmarks, measured side by side in one run:
 *   (1) verifier runs needed to find T* (distinct states, cached by patch hash) vs one per step;
 *   (2) wall time of replaying the demo suite with parallel verification vs sequential;
 *   (3) per-exec overhead: local (bubblewrap) and docker (dockerode) vs spawning
 *       `docker exec` as a subprocess, as mini-swe-agent does.
 * Usage: npx tsx bench/replay.ts [--docker]   (docker parts need a running engine and the base image)
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/embedded.ts';
import { taskForTrajectory } from '../src/verify/load-task.ts';
import { replayTrajectory } from '../src/replay/replay.ts';
import { dockerAvailable, DockerSandbox } from '../src/sandbox/docker.ts';
import { LocalSandbox } from '../src/sandbox/local.ts';
import { openSandbox } from '../src/sandbox/open.ts';
import type { Sandbox } from '../src/sandbox/types.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { loadTasks } from '../src/verify/load-task.ts';

const tasks = await loadTasks(join(REPO_ROOT, 'verifiers'));
const files = readdirSync(join(REPO_ROOT, 'trajectories'))
  .sort()
  .map((f) => join(REPO_ROOT, 'trajectories', f));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function suite(concurrency: number): Promise<{ ms: number; states: number; steps: number }> {
  const started = performance.now();
  let states = 0;
  let steps = 0;
  for (const file of files) {
    const task = taskForTrajectory(file, tasks)!;
    const r = await replayTrajectory(importTrajectory(file), task, {
      openSandbox: (t) => openSandbox('local', t),
      sandboxName: 'local',
      concurrency,
    });
    states += r.verifierRuns.states;
    steps += r.steps.length;
  }
  return { ms: performance.now() - started, states, steps };
}

// (1) and (2): sequential first, then parallel, then each again (noise check), on the local sandbox.
const seq1 = await suite(1);
const par1 = await suite(4);
const seq2 = await suite(1);
const par2 = await suite(4);
console.log(
  `(1) demo suite, ${files.length} trajectories: ${seq1.states} verifier states (base + distinct cumulative patches) vs ${seq1.steps + files.length} for one per step (+ base) → ${(seq1.states / (seq1.steps + files.length)).toFixed(3)}×`,
);
console.log(
  `(2) replay + verification wall time: sequential ${(median([seq1.ms, seq2.ms]) / 1000).toFixed(1)} s, parallel (4 sandboxes) ${(median([par1.ms, par2.ms]) / 1000).toFixed(1)} s → ${(median([seq1.ms, seq2.ms]) / median([par1.ms, par2.ms])).toFixed(2)}× faster (2 cores)`,
);

// (3) per-exec overhead.
async function perExec(sb: Sandbox, n = 30): Promise<number> {
  await sb.exec('true');
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await sb.exec('true');
    times.push(performance.now() - t);
  }
  return median(times);
}
const task = tasks[0]!;
const local = await LocalSandbox.create(task);
const localMs = await perExec(local);
await local.close();
const plain = (() => {
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = performance.now();
    spawnSync('bash', ['-c', 'true']);
    times.push(performance.now() - t);
  }
  return median(times);
})();
let line = `(3) per exec of \`true\`: local bubblewrap ${localMs.toFixed(1)} ms (plain bash subprocess ${plain.toFixed(1)} ms)`;
if (process.argv.includes('--docker') && (await dockerAvailable())) {
  const docker = await DockerSandbox.create(task);
  const dockerodeMs = await perExec(docker);
  const id = (docker as unknown as { container: { id: string } }).container.id;
  const times: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = performance.now();
    spawnSync('docker', ['exec', '-w', '/testbed', id, 'bash', '-lc', 'true']);
    times.push(performance.now() - t);
  }
  await docker.close();
  line += `; docker via dockerode ${dockerodeMs.toFixed(1)} ms vs \`docker exec\` subprocess ${median(times).toFixed(1)} ms → ${(median(times) / dockerodeMs).toFixed(2)}×`;
}
console.log(line);
