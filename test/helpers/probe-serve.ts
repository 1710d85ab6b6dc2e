/** `probe serve` in a process of its own, as a team runs it: started on a free port, its URL once it listens, stopped with SIGINT. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { REPO_ROOT } from '../../src/embedded.ts';
import { PROBE_BIN } from './paths.ts';

/** `probe serve --ckpt CKPT --port 0 …extra`; its `/v1` URL as it prints it. */
export async function startProbeServe(ckpt: string, extra: string[] = []): Promise<{ url: string; server: ChildProcess }> {
  const server = spawn(process.execPath, [PROBE_BIN, 'serve', '--ckpt', ckpt, '--port', '0', ...extra], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let said = '';
  server.stderr!.on('data', (d) => {
    said += String(d);
  });
  while (!/at (http:\/\/\S+)/.test(said)) {
    if (server.exitCode !== null) throw new Error(`probe serve exited: ${said}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: /at (http:\/\/\S+)/.exec(said)![1]!, server };
}

export async function stopProbeServe(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null) return;
  server.kill('SIGINT');
  await once(server, 'exit');
}
