/**
 * Issue 26, class 3: image builds run the task author's recipe. A hostile task directory
 * built through the real terminalImage path, and a hostile task image given to
 * environmentImage, try to read a loopback-only server on the host, open raw sockets, and
 * hold host ports; their Debian packages must still install, and a build past its time is
 * cancelled without leaving a container. Before the fix every build ran with the host's
 * network and NET_RAW: the loopback server answered, the raw sockets opened, the port was
 * the host's.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createConnection, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentError, InputError } from '../src/errors.ts';
import { archiveAllows, archiveRoots } from '../src/sandbox/build-egress.ts';
import { BUILD_TIMEOUT_CAP_S } from '../src/sandbox/build-network.ts';
import { BASE_IMAGE } from '../src/sandbox/docker.ts';
import { environmentImage } from '../src/sandbox/environment-image.ts';
import { DROP_NET_CAPS_X86_64 } from '../src/terminal/build-step/drop-net-caps.ts';
import { confineDockerfile, STEP_WRAPPER_PATH } from '../src/terminal/confine-dockerfile.ts';
import { buildSeconds } from '../src/terminal/confined-build.ts';
import { terminalImage } from '../src/terminal/image.ts';
import { loadTerminalTask } from '../src/terminal/task.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { tempDir } from './helpers/paths.ts';

/** Run inside the build: each probe prints one line, `name: result`. */
const PROBES = String.raw`
import errno, socket, sys, time, urllib.request
what = sys.argv[1]
def err(e):
    return errno.errorcode.get(e.errno, str(e)) if isinstance(e, OSError) and e.errno else type(e).__name__
if what == "loopback":
    port = int(sys.argv[2])
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /token HTTP/1.0\r\n\r\n")
        print("direct:", s.recv(4096).decode(errors="replace").split("\r\n\r\n")[-1] or "empty")
    except Exception as e:
        print("direct:", err(e))
    try:
        print("proxied:", urllib.request.urlopen("http://127.0.0.1:%d/token" % port, timeout=5).read().decode())
    except urllib.error.HTTPError as e:
        print("proxied: HTTP", e.code)
    except Exception as e:
        print("proxied:", err(e))
elif what == "raw":
    for name, args in [("inet", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)), ("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0))]:
        try:
            socket.socket(*args)
            print(name + ":", "OPENED")
        except OSError as e:
            print(name + ":", err(e))
elif what == "bind":
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", int(sys.argv[2])))
        s.listen(1)
        print("bind:", "bound")
        time.sleep(float(sys.argv[3]))
    except OSError as e:
        print("bind:", err(e))
`;

const TOKEN = 'secret-bearer-token';

/** A loopback-only HTTP server on the host, counting what reaches it. */
async function loopbackServer(): Promise<{ server: Server; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.end(TOKEN);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, hits };
}

/** A port free on the host now. */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Whether something accepts connections on the host's 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ host: '127.0.0.1', port });
    c.on('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
  });
}

/** A file's text in an image, read through the engine (the container never starts). */
async function fileInImage(docker: Docker, image: string, path: string): Promise<string> {
  const container = await docker.createContainer({ Image: image, Cmd: ['true'], HostConfig: { NetworkMode: 'none' } });
  try {
    const archive = (await container.getArchive({ path })) as Readable;
    const extract = tar.extract();
    let text = '';
    extract.on('entry', (_header, stream, next) => {
      stream.on('data', (chunk: unknown) => {
        text += (chunk as Buffer).toString('utf8');
      });
      stream.on('end', next);
    });
    await new Promise<void>((resolve, reject) => {
      extract.on('finish', resolve);
      extract.on('error', reject);
      archive.pipe(extract);
    });
    return text;
  } finally {
    await container.remove({ force: true });
  }
}

/** A Harbor task directory with `dockerfile` (and its files) as environment/. */
function taskDir(name: string, dockerfile: string, files: Record<string, string>, buildTimeoutSec = 600): string {
  const dir = join(tempDir(), name);
  mkdirSync(join(dir, 'environment'), { recursive: true });
  mkdirSync(join(dir, 'tests'), { recursive: true });
  writeFileSync(join(dir, 'task.toml'), `version = "1.0"\n[environment]\nbuild_timeout_sec = ${buildTimeoutSec}\n`);
  writeFileSync(join(dir, 'instruction.md'), 'Nothing to do.\n');
  writeFileSync(join(dir, 'tests', 'test.sh'), '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n', { mode: 0o755 });
  writeFileSync(join(dir, 'environment', 'Dockerfile'), dockerfile);
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, 'environment', file), text, { mode: 0o755 });
  return dir;
}

/** `name: value` lines as a record. */
/** Removes an image a test built (gone already is fine). */
function removeImage(docker: Docker, tag: string): Promise<void> {
  return docker
    .getImage(tag)
    .remove({ force: true })
    .then(
      () => {},
      () => {},
    );
}

function results(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((l) => l.split(/:\s*/, 2) as [string, string]),
  );
}

describe.skipIf(skipWithoutDocker)('a task image build reaches nothing of the host (issue 26, class 3)', () => {
  const docker = new Docker();
  let loopback: Awaited<ReturnType<typeof loopbackServer>>;
  beforeAll(async () => {
    loopback = await loopbackServer();
  });
  afterAll(() => loopback.server.close());

  it('a hostile Dockerfile: no host loopback, no raw socket (root, another user, a replaced wrapper), no host port; apt still installs', async () => {
    const held = await freePort();
    const dockerfile = [
      'FROM debian:bookworm-slim',
      'COPY probes.py fake-wrapper /opt/',
      'RUN mkdir /results',
      `RUN python3 /opt/probes.py loopback ${loopback.port} > /results/loopback`,
      'RUN python3 /opt/probes.py raw > /results/raw-root',
      // A step that puts its own program where the wrapper lives, by RUN and by COPY: the next step must still be confined.
      `RUN cp /opt/fake-wrapper ${STEP_WRAPPER_PATH}`,
      'RUN ["/bin/sh", "-c", "python3 /opt/probes.py raw > /results/raw-exec"]',
      `COPY fake-wrapper ${STEP_WRAPPER_PATH}`,
      'RUN python3 /opt/probes.py raw > /results/raw-replaced',
      'RUN chmod 1777 /results',
      'USER nobody',
      'RUN python3 /opt/probes.py raw > /results/raw-nobody',
      'USER root',
      // The loopback server's own port binds (another namespace), and a port held here is not the host's.
      `RUN python3 /opt/probes.py bind ${loopback.port} 0 > /results/bind-taken && python3 /opt/probes.py bind ${held} 4 > /results/bind-held`,
      'RUN apt-get update -q && apt-get install -y -q --no-install-recommends jq && jq --version > /results/jq',
      '',
    ].join('\n');
    const dir = taskDir('hostile-build', dockerfile, { 'probes.py': PROBES, 'fake-wrapper': '#!/bin/sh\nexec "$@"\n' });
    let portSeenBusy = false;
    let building = true;
    const watch = (async () => {
      while (building) {
        if (await accepts(held)) portSeenBusy = true;
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    let tag: string;
    try {
      tag = (await terminalImage(docker, loadTerminalTask(dir))).tag;
    } finally {
      building = false;
      await watch;
    }
    const read = async (name: string) => results(await fileInImage(docker, tag, `/results/${name}`));
    try {
      expect(loopback.hits).toEqual([]);
      const reached = await read('loopback');
      expect(reached.direct).toBe('ECONNREFUSED');
      expect(reached.proxied).toBe('HTTP 403');
      for (const who of ['raw-root', 'raw-exec', 'raw-replaced', 'raw-nobody'])
        expect({ who, ...(await read(who)) }).toEqual({ who, inet: 'EPERM', packet: 'EPERM' });
      expect(await read('bind-taken')).toEqual({ bind: 'bound' });
      expect(await read('bind-held')).toEqual({ bind: 'bound' });
      expect(portSeenBusy).toBe(false);
      expect(await fileInImage(docker, tag, '/results/jq')).toMatch(/^jq-1\.\d/);
    } finally {
      await removeImage(docker, tag);
    }
  }, 300_000);

  it('a Dockerfile the builder reads otherwise than a plain reading (directives past an unknown one) opens no raw socket', async () => {
    // The builder stops reading directives at `# foo=bar`, so `\` stays its escape token and
    // `CMD echo \` continues onto the next line; before the fix probe took the backtick, and
    // the line it swallowed was the fresh wrapper's COPY.
    const dockerfile = [
      '# foo=bar',
      '# escape=`',
      'FROM debian:bookworm-slim',
      'COPY probes.py fake-wrapper /opt/',
      `RUN mkdir /results && cp /opt/fake-wrapper ${STEP_WRAPPER_PATH}`,
      'CMD echo \\',
      'RUN python3 /opt/probes.py raw > /results/raw-swallowed',
      'RUN python3 /opt/probes.py raw > /results/raw-after',
      '',
    ].join('\n');
    const dir = taskDir('directive-build', dockerfile, { 'probes.py': PROBES, 'fake-wrapper': '#!/bin/sh\nexec "$@"\n' });
    const tag = (await terminalImage(docker, loadTerminalTask(dir))).tag;
    try {
      const swallowed = await fileInImage(docker, tag, '/results/raw-swallowed').catch(() => 'absent');
      if (swallowed !== 'absent') expect(results(swallowed)).toEqual({ inet: 'EPERM', packet: 'EPERM' });
      expect(results(await fileInImage(docker, tag, '/results/raw-after'))).toEqual({ inet: 'EPERM', packet: 'EPERM' });
    } finally {
      await removeImage(docker, tag);
    }
  }, 300_000);

  it('a build past its time is cancelled with a clear error and leaves no container', async () => {
    const marker = `probe-attack-build-${process.pid}`;
    const dir = taskDir('slow-build', `FROM debian:bookworm-slim\nRUN sleep 120 && echo ${marker}\n`, {}, 3);
    const started = Date.now();
    const error = await terminalImage(docker, loadTerminalTask(dir)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EnvironmentError);
    expect((error as Error).message).toMatch(
      // With the stand-in's notice where its FROM could not be had (no registry here).
      /^building the image of task slow-build .* took longer than 3 s \(its build_timeout_sec\); the build was cancelled(?:\. It was built on the stand-in: FROM debian:bookworm-slim → probe-base:bookworm \(.*\)\.)?$/,
    );
    expect(Date.now() - started).toBeLessThan(60_000);
    const left = await docker.listContainers({ all: true });
    expect(left.filter((c) => c.Command.includes(marker) || c.Labels['probe.build-gateway'] === String(process.pid))).toEqual([]);
  }, 120_000);

  it('a hostile task image under environmentImage: its apt-get reaches no host loopback and opens no raw socket; the package installs', async () => {
    // The task's own image runs the build: here its apt-get (first on PATH) probes before doing its job.
    const hostile = `probe-attack-build-env:${process.pid}`;
    const script = [
      '#!/bin/sh',
      'mkdir -p /results',
      `python3 /opt/probes.py loopback ${loopback.port} > /results/loopback`,
      'python3 /opt/probes.py raw > /results/raw',
      'exec /usr/bin/apt-get "$@"',
      '',
    ].join('\n');
    const base = await docker.createContainer({ Image: BASE_IMAGE, Cmd: ['true'], HostConfig: { NetworkMode: 'none' } });
    try {
      const pack = tar.pack();
      pack.entry({ name: 'opt/probes.py', mode: 0o644 }, PROBES);
      pack.entry({ name: 'usr/local/bin/apt-get', mode: 0o755 }, script);
      pack.finalize();
      await base.putArchive(pack as unknown as NodeJS.ReadableStream, { path: '/' });
      const [repo, tagPart] = hostile.split(':') as [string, string];
      await base.commit({ repo, tag: tagPart });
    } finally {
      await base.remove({ force: true });
    }
    let built: string | undefined;
    try {
      built = await environmentImage(docker, hostile, ['jq']);
      expect(loopback.hits).toEqual([]);
      const reached = results(await fileInImage(docker, built, '/results/loopback'));
      expect(reached.direct).toBe('ECONNREFUSED');
      expect(reached.proxied).toBe('HTTP 403');
      expect(results(await fileInImage(docker, built, '/results/raw'))).toEqual({ inet: 'EPERM', packet: 'EPERM' });
      expect(await fileInImage(docker, built, '/usr/bin/jq')).not.toBe('');
    } finally {
      for (const image of [built, hostile])
        if (image)
          await docker
            .getImage(image)
            .remove({ force: true })
            .catch(() => {});
    }
  }, 300_000);
});

describe('the rules of a confined build', () => {
  const file = '/tasks/x/environment/Dockerfile';
  // `base` and `local:img` are images the engine has; any other FROM is refused (the builder would pull it).
  const confine = (text: string) =>
    confineDockerfile(
      text,
      file,
      new Map([
        ['local:img', { shell: ['/bin/bash', '-c'] }],
        ['base', {}],
      ]),
    );
  const refusal = (text: string) => {
    try {
      confine(text);
    } catch (error) {
      expect(error).toBeInstanceOf(InputError);
      return (error as Error).message;
    }
    throw new Error('accepted');
  };

  it('starts every RUN with the wrapper, in the stage’s shell, continuations joined', () => {
    const out = confine(
      [
        '# escape=\\',
        'FROM local:img AS a',
        'RUN echo a \\',
        '  # a comment inside',
        '  && echo b',
        'SHELL ["/bin/dash", "-c"]',
        'run ["python3", "-V"]',
        'FROM a',
        'RUN ["/bin/true"]',
        'FROM base',
        'RUN x',
        '',
      ].join('\n'),
    );
    expect(out.split('\n')).toEqual([
      '# escape=\\',
      'FROM local:img AS a',
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/bash","-c","echo a   && echo b"]`,
      'SHELL ["/bin/dash", "-c"]',
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/sh","-c","exec \\"$@\\"","sh","python3","-V"]`,
      'FROM a',
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/true"]`,
      'FROM base',
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/sh","-c","x"]`,
      '',
    ]);
    // A stage from another stage keeps its SHELL: the one `a` ended with.
    expect(confine('FROM local:img AS a\nSHELL ["/bin/zsh", "-c"]\nFROM a\nRUN y\n')).toContain('"/bin/zsh","-c","y"');
  });

  it('refuses what would run outside the confinement or make the engine fetch over the host network, naming the line', () => {
    expect(refusal('FROM base\nONBUILD RUN id\n')).toBe(
      `${file}:2: field "ONBUILD": ONBUILD is not allowed: its steps would run in a later build, outside what confines this one`,
    );
    // A FROM the engine lacks (split over lines or not) would be pulled by the builder itself, its ONBUILD triggers run first.
    expect(refusal('FROM evil.example/x:1 \\\n  AS b\nRUN x\n')).toMatch(
      /:1: field "FROM": FROM evil\.example\/x:1: no earlier stage and no image on this engine is named so/,
    );
    expect(refusal('FROM base\nRUN --network=host curl x\n')).toMatch(/:2: field "RUN": RUN flags .* are BuildKit’s/);
    expect(refusal('FROM base\nADD http://127.0.0.1:8080/token /t\n')).toMatch(
      /:2: field "ADD": ADD http:\/\/127\.0\.0\.1:8080\/token: the engine would fetch it/,
    );
    expect(refusal('FROM base\nARG U\nADD $U/x /t\n')).toMatch(/:3: field "ADD"/);
    expect(refusal('FROM base\nCOPY --from=127.0.0.1:5000/x /a /b\n')).toMatch(
      /:2: field "COPY": COPY --from=127\.0\.0\.1:5000\/x: no earlier stage/,
    );
    expect(refusal('FROM base\nRUN echo \\\\')).toMatch(/:2: field "RUN": the file ends inside a line continuation/);
    expect(
      confine('FROM base AS b\nFROM base\nCOPY --from=b /a /a\nCOPY --from=0 /a /a\nCOPY --from=local:img /a /a\nADD local.tar /\n'),
    ).toContain('ADD local.tar /');
  });

  it('reads directives and line ends as the builder does, and emits a file the builder cannot read otherwise', () => {
    const wrapped = (cmd: string) => [
      `COPY .probe-build-step ${STEP_WRAPPER_PATH}`,
      `RUN ["${STEP_WRAPPER_PATH}","/bin/sh","-c","${cmd}"]`,
    ];
    // Directives end at the first unknown one (B1), or at a `#\v…` line (RE2's \s has no \v):
    // `\` stays the escape token, so CMD's continuation takes the RUN, as the builder reads it.
    for (const first of ['# foo=bar\n# escape=`', '#\vescape=`'])
      expect(confine(`${first}\nFROM base\nCMD echo \\\nRUN x\n`).split('\n')).toEqual(['# escape=\\', 'FROM base', 'CMD echo RUN x', '']);
    // Leading blanks and upper case are still the directive; it is emitted in its one plain form.
    expect(confine('  #  ESCAPE = `  \nFROM base\nCMD echo \\\nRUN x\n').split('\n')).toEqual([
      '# escape=`',
      'FROM base',
      'CMD echo \\',
      ...wrapped('x'),
      '',
    ]);
    // CR LF files read as the builder reads them.
    expect(confine('FROM base\r\nCMD echo \\\r\nRUN x\r\n').split('\n')).toEqual(['# escape=\\', 'FROM base', 'CMD echo RUN x', '']);
    // A carriage return that does not end a line (B2: the builder trims `\r\r`, a plain split kept one).
    expect(refusal('FROM base\nCMD echo \\\r\r\nRUN x\n')).toMatch(new RegExp(`^${file}:2: a carriage return that does not end the line`));
    expect(refusal('FROM base\nRUN echo a\rRUN b\n')).toMatch(/:2: a carriage return/);
    // What the builder itself refuses, and heredocs (whose body lines a newer parser would take).
    expect(refusal('# escape=`\n# escape=\\\nFROM base\n')).toBe(
      `${file}:2: field "# escape": only one escape parser directive can be used`,
    );
    expect(refusal('# escape=x\nFROM base\n')).toMatch(/:1: field "# escape": the escape token is/);
    expect(refusal(`FROM base\nCOPY <<"COPY .probe-build-step ${STEP_WRAPPER_PATH}" /x\nRUN x\n`)).toMatch(
      /:2: field "COPY": heredocs \(<<WORD\) are not allowed/,
    );
    expect(refusal('FROM base\nRUN cat <<EOF > /x\nRUN x\nEOF\n')).toMatch(/:2: field "RUN": heredocs/);
    expect(confine('FROM base\nRUN cat <<< "$x"\n')).toContain('"cat <<< \\"$x\\""');
  });

  it('caps the build time, and the proxy lets through only GET and HEAD under the archive', () => {
    expect(buildSeconds(3)).toBe(3);
    expect(buildSeconds(10 ** 7)).toBe(BUILD_TIMEOUT_CAP_S);
    const roots = archiveRoots([
      'deb http://deb.debian.org/debian bookworm main\n# deb http://x/ y\n',
      'Types: deb\nURIs: http://deb.debian.org/debian-security https://secure.example/\n',
    ]);
    expect(roots).toEqual([
      { origin: 'http://deb.debian.org', path: '/debian/' },
      { origin: 'http://deb.debian.org', path: '/debian-security/' },
    ]);
    expect(archiveAllows(roots, 'GET', 'http://deb.debian.org/debian/dists/bookworm/InRelease')).toBeDefined();
    expect(archiveAllows(roots, 'HEAD', 'http://deb.debian.org/debian-security/x')).toBeDefined();
    for (const [method, url] of [
      ['POST', 'http://deb.debian.org/debian/x'],
      ['GET', 'http://deb.debian.org/debianx/y'],
      ['GET', 'http://deb.debian.org/debian/../etc'],
      ['GET', 'http://deb.debian.org/debian/%2e%2e/secret'],
      ['GET', 'http://127.0.0.1:8080/debian/x'],
      ['GET', 'http://user:pw@deb.debian.org/debian/x'],
      ['GET', '/debian/x'],
      ['CONNECT', 'deb.debian.org:443'],
    ] as const)
      expect({ method, url, allowed: archiveAllows(roots, method, url) !== undefined }).toEqual({ method, url, allowed: false });
  });

  it('embeds exactly what drop-net-caps.S assembles to (where binutils is installed)', () => {
    const source = join(import.meta.dirname, '..', 'src', 'terminal', 'build-step', 'drop-net-caps.S');
    const out = join(tmpdir(), `drop-net-caps-${process.pid}`);
    const as = spawnSync('as', [source, '-o', `${out}.o`]);
    if (as.error || as.status !== 0) return;
    const ld = spawnSync('ld', ['-static', '-nostdlib', '-n', '-s', '--build-id=none', '-o', out, `${out}.o`]);
    expect(ld.status).toBe(0);
    expect(readFileSync(out).equals(DROP_NET_CAPS_X86_64)).toBe(true);
  });
});
