/**
 * What the hardened jail costs, measured side by side in one run (medians, interleaved):
 *   (1) one command: `LocalSandbox.exec('true')` (unprivileged user, user namespace, rlimits,
 *       reduced /etc) vs the cheapest possible bubblewrap call (`bwrap --ro-bind / / true`,
 *       what a root jail with no hardening costs) vs a plain `bash -c true`;
 *   (2) `restore` to the base (tree and .git rebuilt from the read-only base, /tmp emptied)
 *       vs the former `git reset --hard && git clean -fdx` in the same sandbox;
 *   (3) one whole verification of a demo task (restore + test patch + pytest) vs the test
 *       command alone, run in the same jail.
 * Usage: npx tsx bench/sandbox.ts
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/embedded.ts';
import { LocalSandbox } from '../src/sandbox/local.ts';
import { SandboxPool } from '../src/sandbox/pool.ts';
import { loadTasks } from '../src/verify/load-task.ts';
import { verifyState } from '../src/verify/verifier.ts';

const ROUNDS = 21;
const task = (await loadTasks(join(REPO_ROOT, 'verifiers', 'shop__pricing-1', 'task.json')))[0]!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function spawnTime(file: string, args: string[]): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => spawn(file, args, { stdio: 'ignore' }).on('close', () => resolve(performance.now() - started)));
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

const sb = await LocalSandbox.create(task);
const base = { base_commit: task.base_commit, patch: '' };
const t = {
  jail: [] as number[],
  bare: [] as number[],
  bash: [] as number[],
  restore: [] as number[],
  reset: [] as number[],
  verify: [] as number[],
  tests: [] as number[],
};
for (let i = 0; i < ROUNDS; i++) {
  t.jail.push(await timed(() => sb.exec('true')));
  t.bare.push(await spawnTime('bwrap', ['--ro-bind', '/', '/', 'true']));
  t.bash.push(await spawnTime('bash', ['-c', 'true']));
  t.restore.push(await timed(() => sb.restore(base)));
  t.reset.push(await timed(() => sb.exec(`git reset -q --hard ${task.base_commit} && git clean -q -fdx`)));
}
// Grading runs in a graders' sandbox of its own (one, so the rounds reuse it as a pool would).
const graders = new SandboxPool((x) => LocalSandbox.create(x), task, 1);
for (let i = 0; i < Math.ceil(ROUNDS / 3); i++) {
  t.verify.push(await timed(() => verifyState(graders.graders, task, base)));
  t.tests.push(await timed(() => sb.exec(task.test_cmd)));
}
await sb.close();
await graders.close();

const m = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, median(v)])) as Record<keyof typeof t, number>;
const row = (label: string, ms: number, against: string, ref: number) =>
  console.log(`${label.padEnd(44)} ${ms.toFixed(1).padStart(7)} ms   ${(ms / ref).toFixed(2)}× ${against}`);
console.log(`Jail costs on ${task.instance_id} (median of ${ROUNDS}; verification of ${t.verify.length})\n`);
row('exec(true) in the hardened jail', m.jail, 'a bare bwrap call', m.bare);
row('bare `bwrap --ro-bind / / true`', m.bare, 'plain bash -c true', m.bash);
row('restore (tree + .git rebuilt, /tmp emptied)', m.restore, 'git reset --hard + clean in the jail', m.reset);
row('verification (restore, test patch, tests)', m.verify, 'the test command alone in the jail', m.tests);
