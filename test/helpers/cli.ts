/** Running the real `probe` bin as a user does, and what a one-line error must look like. */
import { spawn, spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { REPO_ROOT } from '../../src/embedded.ts';
import { PROBE_BIN } from './paths.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runProbe(args: string[], env: Record<string, string> = {}, timeoutMs = 120_000): CliRun {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, ...env },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/**
 * `runProbe` with PROBE_TEST_KILL_AFTER_APPENDS set (src/store/jsonl-log.ts): the run SIGKILLs
 * itself right after that append (`N`, or `PATH:N` counting only logs whose path ends in
 * PATH), so a kill test knows exactly what was saved. Fails unless the kill ended it.
 */
export function runProbeKilledAfter(args: string[], appends: string, timeoutMs = 600_000): { pid: number } {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, PROBE_TEST_KILL_AFTER_APPENDS: appends },
  });
  expect(run.signal, `the run was to kill itself after append ${appends}:\n${run.stderr}`).toBe('SIGKILL');
  return { pid: run.pid };
}

/**
 * `runProbe` without blocking this process: for a CLI run against a server this test process
 * serves. `onSpawn` is handed a kill (SIGKILL) for a test that interrupts the run.
 */
export function runProbeAsync(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 300_000,
  onSpawn?: (kill: () => void) => void,
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PROBE_BIN, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    onSpawn?.(() => child.kill('SIGKILL'));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Exit 2, exactly one line on stderr, no stack frame, and the line matches `names` (the file, field, flag or port). */
export function expectOneLineError(run: CliRun, names: RegExp): void {
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '');
  expect(run.code, run.stderr).toBe(2);
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/^\s+at /m);
  expect(lines[0]).toMatch(names);
}
