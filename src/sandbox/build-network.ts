/**
 * The only network an image build gets: a network namespace of its own whose one way out
 * is probe's proxy to the Debian archive (issue 26, class 3). Builds run the task author's
 * recipe, and a recipe given the host's network read loopback-only servers, sniffed
 * loopback traffic and held host ports.
 *
 * - A gateway container (NetworkMode `none`: a namespace holding only its own loopback; no
 *   capability, an unprivileged user, a read-only root) runs a relay listening on
 *   127.0.0.1:BUILD_PROXY_PORT there. Build steps join that namespace (`container:<id>`), so
 *   nothing on the host's loopback or interfaces is in reach, and a port they open is the
 *   namespace's, not the host's.
 * - The relay passes each connection to a unix socket bind-mounted from the host, where
 *   this process serves an HTTP forward proxy allowing GET and HEAD of paths under the
 *   `http://` archives named in the base image's apt sources (BASE_IMAGE, built by our
 *   script: never the image being built, whose sources the task may have written).
 *   Anything else gets 403 and is remembered for the build's error message.
 * - One gateway per build (concurrent builds do not share a namespace); it goes when the
 *   build ends, together with any container still in its namespace (a build step left
 *   running by a cancelled build), on SIGINT/SIGTERM too, and leftovers of a killed
 *   process at the next build.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import tar from 'tar-stream';
import { EnvironmentError, ProbeError } from '../errors.ts';
import { processAlive } from '../util/process-alive.ts';
import { onShutdown } from '../util/shutdown.ts';
import { BASE_IMAGE } from './base-image.ts';
import type { BuildEgress } from './image-sources.ts';

/** Where the relay listens inside the build's namespace (any port is free there). */
export const BUILD_PROXY_PORT = 3128;
/** No build runs longer, whatever a task asks for (a task's build_timeout_sec is capped here). */
export const BUILD_TIMEOUT_CAP_S = 1800;
const GATEWAY_LABEL = 'probe.build-gateway';
const SOCKET_IN_GATEWAY = '/probe-build/proxy.sock';
const GATEWAY_READY_MS = 30_000;
/** An upstream request idle this long is dropped (apt retries). */
const UPSTREAM_IDLE_MS = 60_000;
const REFUSED_KEPT = 20;

/**
 * Relay run by python3 in the gateway: 127.0.0.1:port ⇄ the proxy's unix socket, byte for
 * byte. Prints `ready` once listening.
 */
const RELAY = `
import socket, sys, threading
port, path = int(sys.argv[1]), sys.argv[2]
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(128)
print("ready", flush=True)
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
    back.start()
    pump(client, upstream)
    back.join()
    client.close()
    upstream.close()
while True:
    client, _ = server.accept()
    threading.Thread(target=serve, args=(client,), daemon=True).start()
`;

/** What a build is given: the network mode of its steps and the proxy settings they need. */
export interface BuildNetwork {
  /** `container:<gateway id>`, for a build's `networkmode` or a container's NetworkMode. */
  networkMode: string;
  /** `http://127.0.0.1:<port>`, as seen from inside the namespace. */
  proxy: string;
  /** Docker's predefined proxy build args (not kept in the image). */
  buildArgs: Record<string, string>;
  /** The same as `NAME=value` environment entries, for a container of our own. */
  env: string[];
  /** Requests the proxy refused so far (`GET http://host/path`), for the error message. */
  refused: string[];
  /** What the proxy lets through, for the error message. */
  allowed: string;
}

/** One archive the proxy lets through: an origin and the path under it. */
export interface ArchiveRoot {
  origin: string;
  path: string;
}

/** The `http://` archives named in apt sources (one-line `deb` lists and deb822 `URIs:`). */
export function archiveRoots(files: Iterable<string>): ArchiveRoot[] {
  const roots = new Map<string, ArchiveRoot>();
  for (const text of files)
    for (const line of text.split('\n')) {
      const uris =
        /^\s*deb(?:-src)?\s+(?:\[[^\]]*\]\s+)?(\S+)/.exec(line)?.[1]?.split(/\s+/) ??
        /^\s*URIs:\s*(.+)$/i.exec(line)?.[1]?.trim().split(/\s+/) ??
        [];
      for (const uri of uris) {
        let url: URL;
        try {
          url = new URL(uri);
        } catch {
          continue;
        }
        if (url.protocol !== 'http:' || url.username || url.password) continue;
        const path = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
        roots.set(`${url.origin}${path}`, { origin: url.origin, path });
      }
    }
  return [...roots.values()];
}

/** Whether the proxy forwards `method url`: GET or HEAD of a path under one of `roots`, nothing else. */
export function archiveAllows(roots: readonly ArchiveRoot[], method: string | undefined, target: string | undefined): URL | undefined {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  let url: URL;
  try {
    url = new URL(target ?? '');
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || url.username || url.password) return undefined;
  return roots.some((r) => r.origin === url.origin && url.pathname.startsWith(r.path)) ? url : undefined;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'upgrade']);

function forward(req: IncomingMessage, res: ServerResponse, url: URL): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) headers[name] = value;
  headers.host = url.host;
  const upstream = request(
    { hostname: url.hostname, port: url.port || 80, method: req.method, path: `${url.pathname}${url.search}`, headers },
    (answer) => {
      const back: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
    },
  );
  upstream.setTimeout(UPSTREAM_IDLE_MS, () => upstream.destroy(new Error('idle')));
  upstream.on('error', (error) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`probe build proxy: ${error.message}\n`);
    else res.destroy();
  });
  req.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  upstream.end();
}

/** The proxy on a unix socket in `dir`. */
async function startProxy(dir: string, roots: readonly ArchiveRoot[], refused: string[]): Promise<() => Promise<void>> {
  const server = createServer((req, res) => {
    const url = archiveAllows(roots, req.method, req.url);
    if (url) return forward(req, res, url);
    if (refused.length < REFUSED_KEPT) refused.push(`${req.method} ${req.url}`);
    res.writeHead(403, { 'content-type': 'text/plain' }).end('probe build proxy: only GET and HEAD of the Debian archive are allowed\n');
  });
  server.on('connect', (req, client) => {
    if (refused.length < REFUSED_KEPT) refused.push(`CONNECT ${req.url}`);
    client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
  });
  const socket = join(dir, 'proxy.sock');
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });
  // The relay runs as nobody: connecting needs write permission on the socket.
  chmodSync(socket, 0o666);
  return async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}

/** The apt sources of a created (not started) container, read through the engine. */
async function aptSources(container: Docker.Container): Promise<string[]> {
  const archive = (await container.getArchive({ path: '/etc/apt' })) as Readable;
  const extract = tar.extract();
  const files: string[] = [];
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: unknown) => {
      chunks.push(chunk as Buffer);
    });
    stream.on('end', () => {
      if (header.type === 'file' && /(?:\/sources\.list|\.list|\.sources)$/.test(header.name))
        files.push(Buffer.concat(chunks).toString('utf8'));
      next();
    });
    stream.resume();
  });
  await new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', reject);
    archive.on('error', reject);
    archive.pipe(extract);
  });
  return files;
}

/** Containers in the gateway's namespace (build steps), then the gateway itself. */
async function removeGateway(docker: Docker, id: string): Promise<void> {
  const all = await docker.listContainers({ all: true }).catch(() => []);
  const steps = all.filter((c) => (c.HostConfig as { NetworkMode?: string } | undefined)?.NetworkMode === `container:${id}`);
  await Promise.all(
    steps.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {}),
    ),
  );
  await docker
    .getContainer(id)
    .remove({ force: true })
    .catch(() => {});
}

let swept = false;
/** Gateways (and their build steps) whose process is gone: a probe killed mid-build. */
async function sweepGateways(docker: Docker): Promise<void> {
  if (swept) return;
  swept = true;
  const gateways = await docker.listContainers({ all: true, filters: { label: [GATEWAY_LABEL] } });
  const dead = gateways.filter((c) => {
    const pid = Number(c.Labels[GATEWAY_LABEL]);
    return Number.isInteger(pid) && pid !== process.pid && !processAlive(pid);
  });
  await Promise.all(dead.map((c) => removeGateway(docker, c.Id)));
}

async function waitReady(container: Docker.Container): Promise<void> {
  const logs = (await container.logs({ follow: true, stdout: true, stderr: true })) as unknown as Readable;
  try {
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`no answer within ${GATEWAY_READY_MS / 1000} s`)), GATEWAY_READY_MS);
      logs.on('data', (chunk: Buffer) => {
        seen = (seen + chunk.toString('latin1')).slice(-4096);
        if (seen.includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      logs.on('end', () => {
        clearTimeout(timer);
        reject(new Error(`the relay exited: ${seen.replace(/[^\x20-\x7e\n]/g, '').trim()}`));
      });
      logs.on('error', reject);
    });
  } finally {
    logs.destroy();
  }
}

/**
 * Runs `use` with a build network of its own, removed afterwards (with any build step left
 * in it) however `use` ends.
 */
export async function withBuildNetwork<T>(docker: Docker, _egress: BuildEgress, use: (network: BuildNetwork) => Promise<T>): Promise<T> {
  await sweepGateways(docker);
  const dir = mkdtempSync(join(tmpdir(), 'probe-build-net-'));
  // The gateway runs as nobody: it must pass through the directory to the socket (nothing else is in it).
  chmodSync(dir, 0o711);
  let gateway: Docker.Container | undefined;
  let closeProxy: (() => Promise<void>) | undefined;
  const cleanup = async () => {
    if (gateway) await removeGateway(docker, gateway.id);
    await closeProxy?.();
    rmSync(dir, { recursive: true, force: true });
  };
  const takeBack = onShutdown(cleanup);
  try {
    gateway = await docker
      .createContainer({
        Image: BASE_IMAGE,
        Cmd: ['python3', '-I', '-c', RELAY, String(BUILD_PROXY_PORT), SOCKET_IN_GATEWAY],
        User: '65534:65534',
        Labels: { [GATEWAY_LABEL]: String(process.pid) },
        HostConfig: {
          NetworkMode: 'none',
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          ReadonlyRootfs: true,
          PidsLimit: 256,
          Memory: 256 * 2 ** 20,
          Binds: [`${dir}:${dirname(SOCKET_IN_GATEWAY)}:ro`],
        },
      })
      .catch((error: Error) => {
        throw new EnvironmentError(`cannot create the build network's gateway from image ${BASE_IMAGE}: ${error.message}`, {
          cause: error,
        });
      });
    const roots = archiveRoots(await aptSources(gateway));
    if (roots.length === 0)
      throw new EnvironmentError(
        `image ${BASE_IMAGE} names no http:// archive in /etc/apt: a build would have no way to the Debian archive`,
      );
    const refused: string[] = [];
    closeProxy = await startProxy(dir, roots, refused);
    await gateway.start();
    await waitReady(gateway).catch((error: Error) => {
      throw new ProbeError(`the build network's gateway did not start: ${error.message}`, { cause: error });
    });
    const proxy = `http://127.0.0.1:${BUILD_PROXY_PORT}`;
    const buildArgs = { http_proxy: proxy, HTTP_PROXY: proxy };
    return await use({
      networkMode: `container:${gateway.id}`,
      proxy,
      buildArgs,
      env: Object.entries(buildArgs).map(([k, v]) => `${k}=${v}`),
      refused,
      allowed: roots.map((r) => `GET ${r.origin}${r.path}…`).join(', '),
    });
  } finally {
    takeBack();
    await cleanup();
  }
}
