/**
 * One shutdown path for the whole process (src/util/shutdown.ts), in a real child process
 * sent a real signal: the cleanups registered for SIGINT run in the order they were
 * registered and are awaited, then the exit cleanups — the local sandbox's checkout and a
 * run's lock among them — and the process still ends as killed by the signal.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { tempDir } from './helpers/paths.ts';

const src = (file: string) => JSON.stringify(join(REPO_ROOT, 'src', file));

/** A child that registers cleanups, checks out a task's repository and locks a run directory, then waits. */
function child(work: string) {
  const script = `
    import { appendFileSync } from 'node:fs';
    import { onExit, onShutdown } from ${src('util/shutdown.ts')};
    import { checkoutTemplate } from ${src('sandbox/local.ts')};
    import { lockRunDir } from ${src('store/run-lock.ts')};
    import { loadTaskFile } from ${src('verify/load-task.ts')};
    const log = (line) => appendFileSync(${JSON.stringify(join(work, 'order'))}, line + '\\n');
    onShutdown(async (signal) => { await new Promise((r) => setTimeout(r, 200)); log('first ' + signal); });
    const takenBack = onShutdown(() => log('taken back'));
    onShutdown(() => log('second'));
    onExit(() => log('exit'));
    takenBack();
    const [task] = await loadTaskFile(${JSON.stringify(join(REPO_ROOT, 'test/fixtures/tasks/missing-colon/task.json'))});
    lockRunDir(${JSON.stringify(work)});
    console.log(checkoutTemplate(task));
    setInterval(() => {}, 1000);
  `;
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

describe('shutting down', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'on %s: shutdown cleanups in order and awaited, then exit cleanups, checkouts and locks removed, ended by the signal',
    async (signal) => {
      const work = tempDir();
      const proc = child(work);
      const template = await new Promise<string>((resolve) => proc.stdout.on('data', (d: Buffer) => resolve(d.toString().trim())));
      expect(existsSync(template)).toBe(true);
      expect(existsSync(join(work, '.lock'))).toBe(true);
      proc.kill(signal);
      const [code, ended] = (await once(proc, 'exit')) as [number | null, NodeJS.Signals | null];
      expect(ended === signal || code === 128 + (signal === 'SIGINT' ? 2 : 15)).toBe(true);
      expect(readFileSync(join(work, 'order'), 'utf8')).toBe(`first ${signal}\nsecond\nexit\n`);
      expect(existsSync(dirname(template))).toBe(false);
      expect(existsSync(join(work, '.lock'))).toBe(false);
    },
    60_000,
  );
});
