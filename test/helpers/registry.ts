/**
 * A real image registry on loopback for tests: Debian's `docker-registry` (the
 * distribution project's registry, the one a lab's pull-through cache runs), with its
 * storage in a temporary directory. The engine treats 127.0.0.0/8 as an insecure registry,
 * so it pulls from and pushes to it over plain HTTP with no configuration.
 *
 * Tests that need it run wherever the binary and Docker are present; with
 * PROBE_REQUIRE_REGISTRY set (CI), a missing binary fails them instead of skipping.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REGISTRY_BINARY = process.env.PROBE_DOCKER_REGISTRY ?? '/usr/bin/docker-registry';
const registryPresent = spawnSync(REGISTRY_BINARY, ['--version'], { encoding: 'utf8' }).status === 0;
if (!registryPresent && process.env.PROBE_REQUIRE_REGISTRY)
  throw new Error(`PROBE_REQUIRE_REGISTRY is set but ${REGISTRY_BINARY} does not run (apt-get install docker-registry)`);
export const skipWithoutRegistry = !registryPresent;

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface LoopbackRegistry {
  /** `127.0.0.1:<port>`: a reference prefix and a `--registry-mirror` value. */
  host: string;
  /** Pushes local image `image` as `<host>/<path>` (then drops that local tag). */
  push(image: string, path: string): void;
  stop(): Promise<void>;
}

function docker(args: string[]): string {
  const r = spawnSync('docker', args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`docker ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

export async function startRegistry(): Promise<LoopbackRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'probe-registry-'));
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: 127.0.0.1:${port}`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(REGISTRY_BINARY, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4096);
  });
  const host = `127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ok = await fetch(`http://${host}/v2/`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill();
      throw new Error(`docker-registry did not answer on ${host}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host,
    push(image, path) {
      const name = `${host}/${path}`;
      docker(['tag', image, name]);
      docker(['push', name]);
      docker(['image', 'rm', name]);
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill();
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Removes local tags (not the layers other tags still hold); a missing one is fine. */
export function untag(...names: string[]): void {
  for (const name of names) spawnSync('docker', ['image', 'rm', name], { encoding: 'utf8' });
}
