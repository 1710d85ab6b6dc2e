/**
 * Issue 38, build egress allow-listed: a confined build reaches the package indexes on its
 * allow-list (the base image's archives, the user's mirrors, and with publicIndexes the
 * distributions' archives, PyPI and npm) through probe's proxy, and nothing else: no host,
 * no loopback a user did not name, no public name resolving to a private address. The rules
 * are tested as pure functions; then real builds from the base image (which has pip) install
 * a pinned package from the committed fixture index (test/fixtures/pypi: probe-pinned 1.0.0
 * and 2.0.0) served on loopback as the build's PyPI, and fail naming the step and the
 * blocked destination where the index is not named.
 */
import { writeFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentError } from '../src/errors.ts';
import {
  admit,
  archiveRoots,
  describePolicy,
  egressPolicy,
  forbiddenAddress,
  judge,
  packageBuildArgs,
  PUBLIC_INDEXES,
  type Resolve,
} from '../src/sandbox/build-egress.ts';
import { BASE_IMAGE } from '../src/sandbox/base-image.ts';
import { type BuildEgress, DEFAULT_IMAGE_SOURCES } from '../src/settings/image-sources.ts';
import { confineDockerfile, STEP_WRAPPER_PATH } from '../src/terminal/confine-dockerfile.ts';
import { buildConfined, failedStep } from '../src/terminal/confined-build.ts';
import { startProxy } from '../src/sandbox/build-network.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { type PackageIndex, serveIndex } from './helpers/package-index.ts';
import { tempDir } from './helpers/paths.ts';

const BASE_ARCHIVES = archiveRoots(['deb http://deb.debian.org/debian bookworm main\n']);
const egress = (over: Partial<BuildEgress> = {}): BuildEgress => ({ ...DEFAULT_IMAGE_SOURCES.egress, ...over });
const policy = (over: Partial<BuildEgress> = {}) => egressPolicy(egress(over), BASE_ARCHIVES);

/** A resolver answering from `table`, counting its lookups; a name not in it does not resolve. */
function resolver(table: Record<string, string[]>): Resolve & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (host: string) => {
    asked.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  return Object.assign(resolve, { asked });
}

const PUBLIC = resolver({
  'deb.debian.org': ['203.0.113.80'],
  'archive.ubuntu.com': ['203.0.113.81'],
  'pypi.org': ['203.0.113.82', '2001:db8::82'],
});

describe('the allow-list of a build (pure rules)', () => {
  it('lets GET and HEAD through under an allowed archive, nothing else', async () => {
    for (const [method, url] of [
      ['GET', 'http://deb.debian.org/debian/dists/bookworm/InRelease'],
      ['HEAD', 'http://archive.ubuntu.com/ubuntu/dists/noble/Release'],
      ['GET', 'http://security.debian.org/debian-security/dists/x'],
    ] as const)
      expect({ url, allowed: judge(policy(), method, url).allowed }).toEqual({ url, allowed: true });
    for (const [method, url] of [
      ['POST', 'http://deb.debian.org/debian/x'],
      ['PUT', 'http://archive.ubuntu.com/ubuntu/x'],
      ['GET', 'http://deb.debian.org/debianx/y'],
      ['GET', 'http://deb.debian.org/debian/%2e%2e/secret'],
      ['GET', 'http://evil.example/debian/x'],
      ['GET', 'http://127.0.0.1:8080/debian/x'],
      ['GET', 'http://user:pw@deb.debian.org/debian/x'],
      ['GET', 'https://pypi.org/simple/'],
      ['GET', '/debian/x'],
    ] as const)
      expect({ method, url, verdict: judge(policy(), method, url) }).toMatchObject({ method, url, verdict: { allowed: false } });
    // Without the public hosts, the base image's archive stays; Ubuntu's goes.
    expect(judge(policy({ publicIndexes: false }), 'GET', 'http://deb.debian.org/debian/dists/bookworm/InRelease').allowed).toBe(true);
    expect(judge(policy({ publicIndexes: false }), 'GET', 'http://archive.ubuntu.com/ubuntu/x')).toEqual({
      allowed: false,
      reason: 'not on the list: the public indexes are off',
    });
    expect(judge(policy({ publicIndexes: false }), 'GET', 'http://evil.example/ubuntu/x')).toEqual({
      allowed: false,
      reason: 'not on the list',
    });
    const admitted = await admit(policy(), 'GET', 'http://archive.ubuntu.com/ubuntu/x', PUBLIC);
    expect(admitted).toMatchObject({ allowed: true, kind: 'http', address: '203.0.113.81' });
  });

  it('tunnels to PyPI, its file host and npm only with the public indexes, and to nothing unlisted', async () => {
    for (const target of PUBLIC_INDEXES.tunnels) {
      expect(judge(policy(), 'CONNECT', target)).toMatchObject({ allowed: true, kind: 'tunnel', trust: 'public' });
      expect(judge(policy({ publicIndexes: false }), 'CONNECT', target)).toEqual({
        allowed: false,
        reason: 'not on the list: the public indexes are off',
      });
    }
    for (const target of ['evil.example:443', 'pypi.org:22', 'pypi.org:80', 'deb.debian.org:80', '127.0.0.1:443', 'pypi.org', '[::1]:443'])
      expect({ target, verdict: judge(policy(), 'CONNECT', target) }).toMatchObject({ target, verdict: { allowed: false } });
    expect(await admit(policy(), 'CONNECT', 'pypi.org:443', PUBLIC)).toEqual({
      allowed: true,
      kind: 'tunnel',
      host: 'pypi.org',
      port: 443,
      address: '203.0.113.82',
    });
    expect(await admit(policy({ publicIndexes: false }), 'CONNECT', 'pypi.org:443', PUBLIC)).toEqual({
      allowed: false,
      refused: true,
      reason: 'not on the list: the public indexes are off',
    });
    expect(judge(policy(), 'CONNECT', 'evil.example:443')).toEqual({ allowed: false, reason: 'not on the list' });
  });

  it('refuses a public name that resolves to loopback, a private, shared or link-local address, and connects to the address it checked', async () => {
    for (const [address, kind] of [
      ['127.0.0.1', 'loopback'],
      ['10.1.2.3', 'private'],
      ['172.20.0.1', 'private'],
      ['192.168.1.1', 'private'],
      ['100.64.0.1', 'shared (100.64/10)'],
      ['169.254.169.254', 'link-local'],
      ['0.0.0.0', 'unspecified'],
      ['224.0.0.1', 'multicast'],
      ['::1', 'loopback'],
      ['::', 'unspecified'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:a9fe:a9fe', 'link-local'],
      ['fd00::1', 'unique-local'],
      ['fe80::1%eth0', 'link-local'],
      ['ff02::1', 'multicast'],
    ] as const) {
      expect({ address, why: forbiddenAddress(address) }).toEqual({ address, why: kind });
      // One bad address among good ones is enough: the name is refused.
      const resolve = resolver({ 'pypi.org': ['203.0.113.82', address] });
      expect(await admit(policy(), 'CONNECT', 'pypi.org:443', resolve)).toEqual({
        allowed: false,
        refused: true,
        reason: `it resolves to ${address}, a ${kind} address`,
      });
      expect(resolve.asked).toEqual(['pypi.org']);
    }
    for (const address of ['203.0.113.80', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2001:db8::1', '::ffff:8.8.8.8'])
      expect({ address, why: forbiddenAddress(address) }).toEqual({ address, why: undefined });
    const resolve = resolver({ 'deb.debian.org': ['10.0.0.5'] });
    // Probe's base image names deb.debian.org/debian/: reached as it resolves (as before issue 38); its -security twin is public.
    expect(await admit(policy(), 'GET', 'http://deb.debian.org/debian/x', resolve)).toMatchObject({
      allowed: true,
      address: 'deb.debian.org',
    });
    expect(await admit(policy(), 'GET', 'http://deb.debian.org/debian-security/x', resolve)).toMatchObject({
      allowed: false,
      reason: 'it resolves to 10.0.0.5, a private address',
    });
    // A name that does not resolve is not a refusal but a destination out of reach.
    expect(await admit(policy(), 'CONNECT', 'files.pythonhosted.org:443', PUBLIC)).toEqual({
      allowed: false,
      refused: false,
      reason: 'its name does not resolve here: ENOTFOUND',
    });
  });

  it('allows a user-named index wherever it is, loopback included: an http one over its whole origin, an https one by CONNECT', async () => {
    const named = policy({
      pipIndexUrl: 'http://127.0.0.1:8123/simple/',
      pipExtraIndexUrls: ['https://mirror.lab:8443/pypi/simple'],
      npmRegistry: 'http://npm.lab/registry/',
      publicIndexes: false,
    });
    const never: Resolve = () => Promise.reject(new Error('a named index is not looked up'));
    for (const url of [
      'http://127.0.0.1:8123/simple/six/',
      'http://127.0.0.1:8123/files/six-1.17.0-py2.py3-none-any.whl',
      'http://npm.lab/six',
    ])
      expect(await admit(named, 'GET', url, never)).toMatchObject({ allowed: true, kind: 'http', address: new URL(url).hostname });
    expect(await admit(named, 'CONNECT', 'mirror.lab:8443', never)).toMatchObject({ allowed: true, address: 'mirror.lab', port: 8443 });
    for (const [method, url] of [
      ['POST', 'http://127.0.0.1:8123/simple/'],
      ['GET', 'http://127.0.0.1:8124/simple/'],
      ['GET', 'http://localhost:8123/simple/'],
      ['CONNECT', '127.0.0.1:8123'],
      ['CONNECT', 'mirror.lab:443'],
      ['CONNECT', 'pypi.org:443'],
    ] as const)
      expect({ method, url, allowed: judge(named, method, url).allowed }).toEqual({ method, url, allowed: false });
    // PyPI and npm as defaults are the public hosts, not names the user gave.
    expect(policy({ publicIndexes: false }).tunnels).toEqual([]);
    expect(describePolicy(named)).toBe(
      'GET http://127.0.0.1:8123/…, GET http://npm.lab/…, GET http://deb.debian.org/debian/…, CONNECT mirror.lab:8443',
    );
  });

  it('serves what a build asks of an archive from its apt mirror, and allows the mirror', async () => {
    const mirrored = policy({
      aptMirrors: new Map([
        ['http://archive.ubuntu.com/ubuntu/', 'http://127.0.0.1:9999/ubuntu-mirror/'],
        ['http://deb.debian.org/debian/', 'https://mirror.lab/debian/'],
      ]),
      publicIndexes: false,
    });
    const never: Resolve = () => Promise.reject(new Error('a mirror is not looked up'));
    expect(await admit(mirrored, 'GET', 'http://archive.ubuntu.com/ubuntu/dists/noble/InRelease?x=1', never)).toEqual({
      allowed: true,
      kind: 'http',
      upstream: new URL('http://127.0.0.1:9999/ubuntu-mirror/dists/noble/InRelease?x=1'),
      address: '127.0.0.1',
    });
    expect(judge(mirrored, 'GET', 'http://deb.debian.org/debian/pool/main/j/jq/jq.deb')).toMatchObject({
      upstream: new URL('https://mirror.lab/debian/pool/main/j/jq/jq.deb'),
    });
    expect(judge(mirrored, 'GET', 'http://127.0.0.1:9999/ubuntu-mirror/dists/x')).toMatchObject({ allowed: true });
    expect(judge(mirrored, 'CONNECT', 'mirror.lab:443')).toMatchObject({ allowed: true });
    expect(judge(mirrored, 'GET', 'http://archive.ubuntu.com/other/x').allowed).toBe(false);
    expect(judge(mirrored, 'GET', 'http://127.0.0.1:9999/elsewhere').allowed).toBe(false);
    expect(describePolicy(mirrored)).toContain('GET http://archive.ubuntu.com/ubuntu/… (from http://127.0.0.1:9999/ubuntu-mirror/)');
  });

  it('gives pip and npm their indexes as build args, declared after every FROM of the confined Dockerfile', () => {
    expect(packageBuildArgs(egress())).toEqual({
      PIP_INDEX_URL: 'https://pypi.org/simple',
      npm_config_registry: 'https://registry.npmjs.org/',
    });
    const args = packageBuildArgs(
      egress({
        pipIndexUrl: 'http://127.0.0.1:8123/simple/',
        pipExtraIndexUrls: ['https://mirror.lab/simple/', 'http://pypi.lab/simple/'],
        npmRegistry: 'http://npm.lab/',
      }),
    );
    expect(args).toEqual({
      PIP_INDEX_URL: 'http://127.0.0.1:8123/simple/',
      PIP_EXTRA_INDEX_URL: 'https://mirror.lab/simple/ http://pypi.lab/simple/',
      PIP_TRUSTED_HOST: '127.0.0.1:8123 pypi.lab',
      npm_config_registry: 'http://npm.lab/',
    });
    const out = confineDockerfile('FROM base AS a\nRUN x\nFROM a\nRUN y\n', 'Dockerfile', new Map([['base', {}]]), Object.keys(args));
    const declared = Object.keys(args).map((name) => `ARG ${name}`);
    expect(out.split('\n')).toEqual([
      '# escape=\\',
      'FROM base AS a',
      ...declared,
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/sh","-c","x"]`,
      'FROM a',
      ...declared,
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/sh","-c","y"]`,
      '',
    ]);
    expect(() => confineDockerfile('FROM base\n', 'Dockerfile', new Map(), ['A B'])).toThrow(/not a build arg name/);
  });

  it('names a failed step as the task wrote it', () => {
    const step = (argv: string[]) => `Step 3/4 : RUN ${JSON.stringify([STEP_WRAPPER_PATH, ...argv])}\n`;
    expect(failedStep(step(['/bin/sh', '-c', 'pip install six==1.17.0']))).toBe('RUN pip install six==1.17.0');
    expect(failedStep(step(['/bin/sh', '-c', 'exec "$@"', 'sh', 'pip', 'install', 'six']))).toBe('RUN ["pip","install","six"]');
    expect(failedStep(step(['/usr/bin/env', 'true']))).toBe('RUN ["/usr/bin/env","true"]');
    expect(failedStep('Step 1/2 : FROM base\n')).toBe('FROM base');
    expect(failedStep('no steps')).toBeUndefined();
  });
});

/** `cmd`'s output in a container of `image` with no network. */
async function runIn(docker: Docker, image: string, cmd: string[]): Promise<string> {
  const container = await docker.createContainer({ Image: image, Cmd: cmd, Tty: true, HostConfig: { NetworkMode: 'none' } });
  try {
    await container.start();
    await container.wait();
    return (await container.logs({ stdout: true, stderr: true })).toString('utf8').trim();
  } finally {
    await container.remove({ force: true });
  }
}

describe.skipIf(skipWithoutDocker)('a confined build reaches the indexes on its list and nothing else (docker)', () => {
  const docker = new Docker();
  const tags: string[] = [];
  let index: PackageIndex;

  /** Builds `dockerfile` (with `files` beside it) confined, with `over` as its egress; the tag, or the error. */
  async function build(name: string, dockerfile: string, over: Partial<BuildEgress>, files: Record<string, string> = {}) {
    const context = tempDir();
    writeFileSync(join(context, 'Dockerfile'), dockerfile);
    for (const [file, text] of Object.entries(files)) writeFileSync(join(context, file), text);
    const tag = `probe-build-egress-test:${process.pid}-${name}`;
    tags.push(tag);
    const error = await buildConfined(docker, context, {
      tag,
      timeoutSec: 600,
      what: `test build ${name}`,
      dockerfile: join(context, 'Dockerfile'),
      egress: egress(over),
    }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    return { tag, error };
  }

  beforeAll(async () => {
    index = await serveIndex();
  });

  afterAll(async () => {
    await index?.close();
    for (const tag of tags)
      await docker
        .getImage(tag)
        .remove({ force: true })
        .catch(() => {});
  });

  it('installs a pinned package from a user-named index on loopback; a step still cannot reach the host loopback directly, nor keeps the settings', async () => {
    const probe = [
      'import socket, sys',
      'try:',
      `    socket.create_connection(("127.0.0.1", ${index.port}), timeout=5)`,
      '    print("direct: CONNECTED")',
      'except OSError as e:',
      '    print("direct:", type(e).__name__)',
    ].join('\n');
    const { tag, error } = await build(
      'named',
      `FROM ${BASE_IMAGE}\nCOPY probe.py /opt/\nRUN python3 /opt/probe.py > /direct\nRUN pip install -q probe-pinned==1.0.0\n`,
      { pipIndexUrl: index.url, publicIndexes: false },
      { 'probe.py': probe },
    );
    expect(error).toBeUndefined();
    expect(index.hits).toContain('GET /simple/probe-pinned/');
    expect(index.hits.some((h) => h.startsWith('GET /files/probe_pinned-1.0.0-'))).toBe(true);
    expect(index.hits.some((h) => h.includes('probe_pinned-2.0.0'))).toBe(false);
    // The pin, not the newest.
    expect(await runIn(docker, tag, ['python3', '-c', 'import probe_pinned; print(probe_pinned.VERSION)'])).toBe('1.0.0');
    expect(await runIn(docker, tag, ['cat', '/direct'])).toBe('direct: ConnectionRefusedError');
    // ARG, not ENV: neither the index nor the proxy is in the image's environment.
    const env = (await docker.getImage(tag).inspect()).Config.Env ?? [];
    expect(env.filter((e) => /^(PIP_|npm_config|https?_proxy|HTTPS?_PROXY)/.test(e))).toEqual([]);
  }, 300_000);

  it('with the public defaults: the unnamed loopback index gets 403 through the proxy, and the pip step fails naming PyPI', async () => {
    index.hits.length = 0;
    const proxied = [
      'import sys, urllib.request, urllib.error',
      'try:',
      `    urllib.request.urlopen("http://127.0.0.1:${index.port}/simple/", timeout=10)`,
      '    sys.exit("reached the loopback index")',
      'except urllib.error.HTTPError as e:',
      '    sys.exit(0 if e.code == 403 else "HTTP %d" % e.code)',
    ].join('\n');
    const { error } = await build(
      'public',
      `FROM ${BASE_IMAGE}\nCOPY proxied.py /opt/\nRUN python3 /opt/proxied.py\nRUN pip install --retries 0 probe-pinned==1.0.0\n`,
      {},
      { 'proxied.py': proxied },
    );
    expect(index.hits).toEqual([]);
    expect(error).toBeInstanceOf(EnvironmentError);
    const message = error!.message;
    // One paragraph naming the step, what the proxy refused and could not reach, and what it allows; then the step's output.
    const [paragraph = '', ...output] = message.split('\n');
    const step = 'building test build public failed at RUN pip install --retries 0 probe-pinned==1.0.0 (exit code 1); ';
    const refused = `probe's proxy, the build's only way out, refused GET http://127.0.0.1:${index.port}/simple/ (not on the list)`;
    const allows = `; it allows only ${describePolicy(egressPolicy(egress(), BASE_ARCHIVES))}. Its last output:`;
    const pypiResolves = await lookup('pypi.org').then(
      () => true,
      () => false,
    );
    if (pypiResolves) {
      // A machine with a network: PyPI, reached through the proxy (or not, past a firewall), has no probe-pinned.
      expect(paragraph.startsWith(step + refused)).toBe(true);
      expect(paragraph.endsWith(allows)).toBe(true);
      expect(paragraph.slice((step + refused).length, -allows.length)).toMatch(
        /^(?: and could not reach CONNECT pypi\.org:443 \([^)]*\))?$/,
      );
    } else
      expect(paragraph).toBe(
        `${step}${refused} and could not reach CONNECT pypi.org:443 (its name does not resolve here: ENOTFOUND)${allows}`,
      );
    expect(paragraph).toContain('CONNECT pypi.org:443');
    expect(output.join('\n')).toContain('No matching distribution found for probe-pinned==1.0.0');
    expect(output.join('\n')).not.toContain('\x1b[');
  }, 300_000);

  it('with --no-public-indexes and no mirror, the pip step fails naming CONNECT pypi.org:443 as refused', async () => {
    const { error } = await build('offline', `FROM ${BASE_IMAGE}\nRUN pip install --retries 0 probe-pinned==1.0.0\n`, {
      publicIndexes: false,
    });
    expect(error).toBeInstanceOf(EnvironmentError);
    const message = error!.message;
    expect(message.split('\n')[0]).toBe(
      'building test build offline failed at RUN pip install --retries 0 probe-pinned==1.0.0 (exit code 1); ' +
        "probe's proxy, the build's only way out, refused CONNECT pypi.org:443 (not on the list: the public indexes are off); " +
        'it allows only GET http://deb.debian.org/debian/…. Its last output:',
    );
  }, 300_000);
});

describe('the proxy itself (in process, on its unix socket)', () => {
  let dir: string;
  let close: () => Promise<void>;
  let upstream: Server;
  let port: number;
  const hits: string[] = [];
  const log = { refused: [] as string[], unreachable: [] as string[] };
  // A loopback server standing for a user's mirror (named) and for a public host resolving to loopback (refused).
  const lying = resolver({ 'archive.ubuntu.com': ['127.0.0.1'], 'pypi.org': ['127.0.0.1'] });

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      hits.push(`${req.method} ${req.headers.host} ${req.url}`);
      res.end('from upstream');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as AddressInfo).port;
    dir = tempDir();
    const rules = egressPolicy(
      egress({
        pipExtraIndexUrls: [`https://127.0.0.1:${port}/simple/`],
        aptMirrors: new Map([['http://deb.debian.org/debian/', `http://127.0.0.1:${port}/mirror/`]]),
      }),
      BASE_ARCHIVES,
    );
    close = await startProxy(dir, rules, log, lying);
  });
  afterAll(async () => {
    await close?.();
    upstream?.close();
  });

  const get = (target: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ socketPath: join(dir, 'proxy.sock'), path: target, headers: { host: new URL(target).host } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  const connectTo = (target: string) =>
    new Promise<{ status: number; socket: Duplex; body: string }>((resolve, reject) => {
      const req = request({ socketPath: join(dir, 'proxy.sock'), method: 'CONNECT', path: target });
      req.on('connect', (res, socket, head) => {
        if (res.statusCode === 200) return resolve({ status: 200, socket, body: '' });
        let body = head.toString();
        socket.on('data', (c: Buffer) => {
          body += c.toString();
        });
        socket.on('end', () => resolve({ status: res.statusCode ?? 0, socket, body }));
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: res.socket, body }));
      });
      req.on('error', reject);
      req.end();
    });

  it('fetches an archive from its mirror, tunnels to a named index, and refuses a public name resolving to loopback', async () => {
    expect(await get('http://deb.debian.org/debian/dists/bookworm/InRelease')).toEqual({ status: 200, body: 'from upstream' });
    expect(hits).toEqual([`GET 127.0.0.1:${port} /mirror/dists/bookworm/InRelease`]);
    // CONNECT to the named https index: a tunnel to it (plain HTTP inside, for the test).
    const tunnel = await connectTo(`127.0.0.1:${port}`);
    expect(tunnel.status).toBe(200);
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      tunnel.socket.on('data', (c: Buffer) => {
        text += c.toString();
      });
      tunnel.socket.on('end', () => resolve(text));
      tunnel.socket.write('GET /simple/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*from upstream$/);
    expect(hits).toHaveLength(2);
    // Public names the resolver puts on loopback: refused, nothing reaches the server.
    const refused = await get('http://archive.ubuntu.com/ubuntu/dists/noble/InRelease');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(
      /^probe build proxy: GET http:\/\/archive\.ubuntu\.com\/ubuntu\/dists\/noble\/InRelease is not allowed \(it resolves to 127\.0\.0\.1, a loopback address\); a build may fetch only GET http:\/\/deb\.debian\.org\/debian\/… \(from/,
    );
    const connectRefused = await connectTo('pypi.org:443');
    expect(connectRefused.status).toBe(403);
    expect(connectRefused.body).toContain('CONNECT pypi.org:443 is not allowed (it resolves to 127.0.0.1, a loopback address)');
    expect((await connectTo('evil.example:443')).status).toBe(403);
    expect((await get(`http://127.0.0.1:${port}/other`)).status).toBe(403);
    // Allowed, but its name does not resolve: 502, and noted as out of reach rather than refused.
    expect((await connectTo('files.pythonhosted.org:443')).status).toBe(502);
    expect(hits).toHaveLength(2);
    expect(log).toEqual({
      refused: [
        'GET http://archive.ubuntu.com/ubuntu/dists/noble/InRelease (it resolves to 127.0.0.1, a loopback address)',
        'CONNECT pypi.org:443 (it resolves to 127.0.0.1, a loopback address)',
        'CONNECT evil.example:443 (not on the list)',
        `GET http://127.0.0.1:${port}/other (not on the list)`,
      ],
      unreachable: ['CONNECT files.pythonhosted.org:443 (its name does not resolve here: ENOTFOUND)'],
    });
  });
});
