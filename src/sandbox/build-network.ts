/**
 * The only network an image build gets: a network namespace of its own whose one way out
 * is probe's proxy, which lets through only the package indexes on the build's allow-list
 * (build-egress.ts; issue 26, class 3, and issue 38). Builds run the task author's recipe,
 * and a recipe given the host's network read loopback-only servers, sniffed loopback
 * traffic and held host ports.
 *
 * - A gateway container (NetworkMode `none`: a namespace holding only its own loopback; no
 *   capability, an unprivileged user, a read-only root) runs a relay listening on
 *   127.0.0.1:BUILD_PROXY_PORT there. Build steps join that namespace (`container:<id>`), so
 *   nothing on the host's loopback or interfaces is in reach, and a port they open is the
 *   namespace's, not the host's.
 * - The relay passes each connection to a unix socket bind-mounted from the host, where
 *   this process serves an HTTP forward proxy. It allows GET and HEAD of `http://` URLs and
 *   CONNECT tunnels to `host:port` pairs on the allow-list: always the `http://` archives
 *   named in the base image's apt sources (BASE_IMAGE, built by our script: never the
 *   image being built, whose sources the task may have written); the user's mirrors (pip's
 *   indexes, npm's registry, apt mirrors, whose requests it rewrites); and unless
 *   `--no-public-indexes` the public ones (Debian's and Ubuntu's archives, PyPI and its
 *   file host, npm). A public name is looked up here, refused when it resolves to loopback
 *   or a private, link-local or multicast address, and connected to at the address
 *   checked. Anything else gets 403 and is remembered, with what could not be reached, for
 *   the build's error message.
 * - The build finds the proxy through Docker's predefined proxy build args (http_proxy,
 *   https_proxy), and pip's and npm's indexes through build args the confined Dockerfile
 *   declares (packageBuildArgs, confine-dockerfile.ts): none is kept in the image.
 * - One gateway per build (concurrent builds do not share a namespace); it goes when the
 *   build ends, together with any container still in its namespace (a build step left
 *   running by a cancelled build), on SIGINT/SIGTERM too, and leftovers of a killed
 *   process at the next build.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import type Docker from 'dockerode';
import tar from 'tar-stream';
import { EnvironmentError, ProbeError } from '../errors.ts';
import { processAlive } from '../util/process-alive.ts';
import { onShutdown } from '../util/shutdown.ts';
import { BASE_IMAGE } from './base-image.ts';
import {
  admit,
  archiveRoots,
  describePolicy,
  type EgressPolicy,
  egressPolicy,
  packageBuildArgs,
  type Resolve,
  requestName,
  systemResolve,
} from './build-egress.ts';
import type { BuildEgress } from '../settings/image-sources.ts';
import { Semaphore } from '../util/semaphore.ts';

/** Where the relay listens inside the build's namespace (any port is free there). */
export const BUILD_PROXY_PORT = 3128;
/** No build runs longer, whatever a task asks for (a task's build_timeout_sec is capped here). */
export const BUILD_TIMEOUT_CAP_S = 1800;
const GATEWAY_LABEL = 'probe.build-gateway';
const SOCKET_IN_GATEWAY = '/probe-build/proxy.sock';
const GATEWAY_READY_MS = 30_000;
/** An upstream request idle this long is dropped (apt retries). */
const UPSTREAM_IDLE_MS = 60_000;
/** Upstream requests one build's proxy makes at once; more wait (a pipelined flood in one connection included). */
const UPSTREAM_AT_ONCE = 16;
/** Tunnels one build holds at once; one more is answered 503. */
const TUNNELS_AT_ONCE = 64;
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
export interface BuildNetwork extends EgressLog {
  /** `container:<gateway id>`, for a build's `networkmode` or a container's NetworkMode. */
  networkMode: string;
  /** `http://127.0.0.1:<port>`, as seen from inside the namespace. */
  proxy: string;
  /**
   * Docker's predefined proxy build args (http_proxy, https_proxy and their upper-case
   * twins: passed to every RUN, never kept in the image) and pip's and npm's settings
   * (packageBuildArgs: a Dockerfile must declare them, see confine-dockerfile.ts).
   */
  buildArgs: Record<string, string>;
  /** The same as `NAME=value` environment entries, for a container of our own. */
  env: string[];
  /** What the proxy lets through, for the error message. */
  allowed: string;
}

/**
 * The build's way out in one sentence for an error message: what the proxy refused, what
 * it could not reach, and what it allows.
 */
export function describeEgress(network: BuildNetwork): string {
  const blocked = [
    ...(network.refused.length > 0 ? [`refused ${network.refused.join(', ')}`] : []),
    ...(network.unreachable.length > 0 ? [`could not reach ${network.unreachable.join(', ')}`] : []),
  ];
  return blocked.length > 0
    ? `probe's proxy, the build's only way out, ${blocked.join(' and ')}; it allows only ${network.allowed}`
    : `the build's only way out is probe's proxy, which allows only ${network.allowed}`;
}

/** Requests the proxy turned away (and where it could not go), kept for the build's error message. */
export interface EgressLog {
  /** `CONNECT pypi.org:443 (not on the list)`: what the policy refused. */
  refused: string[];
  /** `CONNECT pypi.org:443 (its name does not resolve here: ENOTFOUND)`: allowed, but not reached. */
  unreachable: string[];
}

function note(list: string[], entry: string): void {
  if (list.length < REFUSED_KEPT && !list.includes(entry)) list.push(entry);
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'upgrade']);
/** A GET or HEAD is sent on without a body: headers announcing one would leave the upstream waiting for it. */
const BODY_HEADERS = new Set(['content-length', 'transfer-encoding', 'expect']);

/** `req` sent to `url` at `address` (the address checked, for a public host; else its name). */
/** `done` is called once, when the upstream request is over (answered, failed or dropped). */
function forward(req: IncomingMessage, res: ServerResponse, url: URL, address: string, log: EgressLog, done: () => void): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (value !== undefined && !HOP_BY_HOP.has(name) && !BODY_HEADERS.has(name)) headers[name] = value;
  headers.host = url.host;
  const secure = url.protocol === 'https:';
  const options = {
    host: address,
    port: url.port || (secure ? 443 : 80),
    method: req.method,
    path: `${url.pathname}${url.search}`,
    headers,
    ...(secure ? { servername: url.hostname } : {}),
  };
  const answer = (back: IncomingMessage) => {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(back.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
    res.writeHead(back.statusCode ?? 502, out);
    back.pipe(res);
  };
  const upstream = secure ? httpsRequest(options, answer) : request(options, answer);
  upstream.once('close', done);
  upstream.setTimeout(UPSTREAM_IDLE_MS, () => upstream.destroy(new Error('idle')));
  upstream.on('error', (error) => {
    note(log.unreachable, `${req.method} ${url.href} (${error.message})`);
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`probe build proxy: ${error.message}\n`);
    else res.destroy();
  });
  req.on('close', () => {
    if (!res.writableFinished) upstream.destroy();
  });
  upstream.end();
}

/** A CONNECT admitted: `client` ⇄ `address:port`, byte for byte, once the upstream answers. */
function tunnel(client: Duplex, head: Buffer, target: string, address: string, port: number, log: EgressLog): void {
  const upstream = connect({ host: address, port });
  let connected = false;
  upstream.setTimeout(UPSTREAM_IDLE_MS, () => upstream.destroy(new Error('idle')));
  upstream.once('connect', () => {
    connected = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on('error', (error) => {
    if (!connected && !client.destroyed) {
      note(log.unreachable, `CONNECT ${target} (${error.message})`);
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\n');
    } else client.destroy();
  });
  upstream.on('close', () => client.destroy());
  client.on('close', () => upstream.destroy());
}

/** The proxy on a unix socket in `dir` (`proxy.sock`); the function it returns closes it. */
export async function startProxy(dir: string, policy: EgressPolicy, log: EgressLog, resolve: Resolve): Promise<() => Promise<void>> {
  const refuse = (what: string, reason: string) => {
    note(log.refused, `${what} (${reason})`);
    return `probe build proxy: ${what} is not allowed (${reason}); a build may fetch only ${describePolicy(policy)}\n`;
  };
  // One build's steps share UPSTREAM_AT_ONCE upstream requests: a step that pipelines thousands of requests in one
  // write waits its turn instead of holding thousands of the host process's sockets.
  const slots = new Semaphore(UPSTREAM_AT_ONCE);
  const server = createServer((req, res) => {
    admit(policy, req.method, req.url, resolve).then(
      async (admission) => {
        if (admission.allowed && admission.kind === 'http') {
          await slots.acquire();
          // A client gone while it waited gives its turn back at once.
          if (req.socket.destroyed) return slots.release();
          return forward(req, res, admission.upstream, admission.address, log, () => slots.release());
        }
        const what = requestName(req.method, req.url);
        if (!admission.allowed && !admission.refused) {
          note(log.unreachable, `${what} (${admission.reason})`);
          return res.writeHead(502, { 'content-type': 'text/plain' }).end(`probe build proxy: ${what}: ${admission.reason}\n`);
        }
        res
          .writeHead(403, { 'content-type': 'text/plain' })
          .end(refuse(what, admission.allowed ? 'not a plain request' : admission.reason));
      },
      (error: Error) => res.writeHead(500).end(`probe build proxy: ${error.message}\n`),
    );
  });
  // A tunnel's socket leaves the server's connections: it is closed with the proxy all the same.
  const tunnels = new Set<Duplex>();
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    if (tunnels.size >= TUNNELS_AT_ONCE) {
      note(log.refused, `${requestName('CONNECT', req.url)} (over ${TUNNELS_AT_ONCE} tunnels at once)`);
      client.on('error', () => {});
      return client.end('HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\r\n');
    }
    tunnels.add(client);
    client.on('close', () => tunnels.delete(client));
    client.on('error', () => {});
    admit(policy, 'CONNECT', req.url, resolve).then(
      (admission) => {
        const what = requestName('CONNECT', req.url);
        if (admission.allowed && admission.kind === 'tunnel')
          return tunnel(client, head, req.url ?? '', admission.address, admission.port, log);
        if (!admission.allowed && !admission.refused) {
          note(log.unreachable, `${what} (${admission.reason})`);
          return client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\n');
        }
        const body = refuse(what, admission.allowed ? 'not a tunnel' : admission.reason);
        client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      },
      () => client.destroy(),
    );
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
    for (const client of tunnels) client.destroy();
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
export async function withBuildNetwork<T>(
  docker: Docker,
  egress: BuildEgress,
  use: (network: BuildNetwork) => Promise<T>,
  resolve: Resolve = systemResolve,
): Promise<T> {
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
        `image ${BASE_IMAGE} names no http:// archive in /etc/apt: a build would have no way to its distribution's archive`,
      );
    const policy = egressPolicy(egress, roots);
    const log: EgressLog = { refused: [], unreachable: [] };
    closeProxy = await startProxy(dir, policy, log, resolve);
    await gateway.start();
    await waitReady(gateway).catch((error: Error) => {
      throw new ProbeError(`the build network's gateway did not start: ${error.message}`, { cause: error });
    });
    const proxy = `http://127.0.0.1:${BUILD_PROXY_PORT}`;
    const buildArgs = { http_proxy: proxy, HTTP_PROXY: proxy, https_proxy: proxy, HTTPS_PROXY: proxy, ...packageBuildArgs(egress) };
    return await use({
      networkMode: `container:${gateway.id}`,
      proxy,
      buildArgs,
      env: Object.entries(buildArgs).map(([k, v]) => `${k}=${v}`),
      refused: log.refused,
      unreachable: log.unreachable,
      allowed: describePolicy(policy),
    });
  } finally {
    takeBack();
    await cleanup();
  }
}
