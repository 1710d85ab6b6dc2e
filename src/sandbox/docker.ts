/**
 * The `docker` sandbox (dockerode): a container from the task's image — or, for tasks
 * with a `repo_path`, from the base image with the repository copied in — with no
 * network, memory and pid limits, and labels so leftovers of a killed run are found and
 * removed at the next start. Commands are wrapped in an in-container `timeout -k`
 * (signals are not forwarded through `docker exec`); files go through put/get archive;
 * containers are removed on close and on SIGINT/SIGTERM.
 */
import { spawn } from 'node:child_process';
import { PassThrough, type Readable } from 'node:stream';
import Docker from 'dockerode';
import tar from 'tar-stream';
import { ProbeError } from '../errors.ts';
import { noteInterrupt } from '../util/interrupt.ts';
import type { EnvState, LoadedTask } from '../schema/task.ts';
import { EXCLUDE_ARTIFACTS, restoreState, treeDiff } from './git-state.ts';
import { checkoutTemplate, TOOLS_DIR, TOOLS_MOUNT } from './local.ts';
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_OUTPUT_CAP, type ExecOptions, type ExecResult, type Sandbox, type SandboxOptions } from './types.ts';

/** Image for tasks that bring a repository rather than an image (built by scripts/docker-base-image.sh). */
export const BASE_IMAGE = process.env.PROBE_DOCKER_IMAGE ?? 'probe-base:bookworm';
const LABEL = 'probe.sandbox';

let docker: Docker | undefined;
function client(): Docker {
  docker ??= new Docker();
  return docker;
}

/** Whether a Docker engine answers. */
export async function dockerAvailable(): Promise<boolean> {
  try {
    await client().ping();
    return true;
  } catch {
    return false;
  }
}

const live = new Set<DockerSandbox>();
let swept = false;
let handlersInstalled = false;

/** Removes containers a previous, killed run left behind (their owner process is gone); once per process unless forced. */
export async function sweepLeftovers(force = false): Promise<void> {
  if (swept && !force) return;
  swept = true;
  const containers = await client().listContainers({ all: true, filters: { label: [LABEL] } });
  await Promise.all(containers.filter((c) => {
    const pid = Number(c.Labels['probe.pid']);
    if (pid === process.pid) return false;
    try { process.kill(pid, 0); return false; } catch { return true; }
  }).map((c) => client().getContainer(c.Id).remove({ force: true }).catch(() => {})));
}

function installSignalCleanup(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      noteInterrupt(signal);
      void Promise.allSettled([...live].map((sb) => sb.close())).then(() => process.kill(process.pid, signal));
    });
  }
}

function tarOf(dir: string): Readable {
  return spawn('tar', ['-C', dir, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] }).stdout;
}

export class DockerSandbox implements Sandbox {
  readonly provider = 'docker';
  private closed = false;

  private constructor(private readonly container: Docker.Container, readonly workdir: string, private readonly outputCap: number, private readonly baseCommit: string) {}

  static async create(task: LoadedTask, options: SandboxOptions = {}): Promise<DockerSandbox> {
    if (!(await dockerAvailable())) throw new ProbeError('no Docker engine answers (is dockerd running?)');
    await sweepLeftovers();
    installSignalCleanup();
    const image = task.image ?? BASE_IMAGE;
    const container = await client().createContainer({
      Image: image,
      Cmd: ['sleep', 'infinity'],
      WorkingDir: '/',
      NetworkDisabled: true,
      Labels: { [LABEL]: '1', 'probe.pid': String(process.pid), 'probe.task': task.instance_id },
      HostConfig: { NetworkMode: 'none', Memory: 4 * 2 ** 30, PidsLimit: 1024, Init: true },
    }).catch((error: Error) => {
      throw new ProbeError(`cannot create a container from image ${image}: ${error.message}`, { cause: error });
    });
    const sb = new DockerSandbox(container, task.workdir, options.outputCap ?? DEFAULT_OUTPUT_CAP, task.base_commit);
    live.add(sb);
    try {
      await container.start();
      await sb.exec(`mkdir -p ${TOOLS_MOUNT} ${task.workdir}`, { cwd: '/' });
      await container.putArchive(tarOf(TOOLS_DIR), { path: TOOLS_MOUNT });
      if (task.repoDir) {
        await container.putArchive(tarOf(checkoutTemplate(task)), { path: task.workdir });
      }
      const head = await sb.exec(`git config --global --add safe.directory '*' && git rev-parse HEAD && ${EXCLUDE_ARTIFACTS}`);
      if (head.exitCode !== 0 || !head.output.startsWith(task.base_commit)) {
        throw new ProbeError(`the repository in the container is not at base_commit ${task.base_commit}: ${head.output.trim()}`);
      }
    } catch (error) {
      await sb.close();
      throw error;
    }
    return sb;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.closed) throw new ProbeError('sandbox is closed');
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
    const started = performance.now();
    const exec = await this.container.exec({
      // The time limit is enforced inside the container: docker exec does not forward signals.
      Cmd: ['timeout', '-k', '5', String(seconds), 'bash', '-c', 'exec 2>&1\neval "$1"', 'bash', command],
      AttachStdout: true, AttachStderr: true, WorkingDir: options.cwd ?? this.workdir,
      Env: Object.entries({ HOME: '/root', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1', TERM: 'dumb', ...options.env }).map(([k, v]) => `${k}=${v}`),
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    const chunks: Buffer[] = [];
    let kept = 0;
    let truncated = false;
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => {
      const room = this.outputCap - kept;
      if (room <= 0) { truncated = true; return; }
      chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      truncated ||= chunk.length > room;
      kept += Math.min(room, chunk.length);
    });
    this.container.modem.demuxStream(stream, sink, sink);
    let hostTimedOut = false;
    await new Promise<void>((resolve, reject) => {
      // A backstop in case the in-container timeout itself cannot run.
      const backstop = setTimeout(() => { hostTimedOut = true; stream.destroy(); resolve(); }, timeoutMs + 15_000);
      stream.on('end', () => { clearTimeout(backstop); resolve(); });
      stream.on('close', () => { clearTimeout(backstop); resolve(); });
      stream.on('error', (error) => { clearTimeout(backstop); reject(error); });
    });
    const info = await exec.inspect();
    const exitCode = hostTimedOut ? 124 : info.ExitCode ?? 1;
    return {
      output: Buffer.concat(chunks).toString('utf8'),
      exitCode, timedOut: hostTimedOut || exitCode === 124 || exitCode === 137,
      truncated, durationMs: performance.now() - started,
    };
  }

  private absolute(path: string): string {
    return path.startsWith('/') ? path : `${this.workdir}/${path}`;
  }

  async readFile(path: string): Promise<Buffer> {
    const archive = await this.container.getArchive({ path: this.absolute(path) }).catch((error: Error) => {
      throw new ProbeError(`cannot read ${path} in the container: ${error.message}`, { cause: error });
    });
    const extract = tar.extract();
    const parts: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      extract.on('entry', (_header, entry, next) => {
        entry.on('data', (d: unknown) => parts.push(d as Buffer));
        entry.on('end', next);
        entry.resume();
      });
      extract.on('finish', resolve);
      extract.on('error', reject);
      archive.pipe(extract);
    });
    return Buffer.concat(parts);
  }

  async writeFile(path: string, data: Buffer | string): Promise<void> {
    const abs = this.absolute(path);
    const slash = abs.lastIndexOf('/');
    const dir = abs.slice(0, slash) || '/';
    await this.exec(`mkdir -p '${dir}'`, { cwd: '/' });
    const pack = tar.pack();
    pack.entry({ name: abs.slice(slash + 1), mode: 0o644 }, Buffer.from(data));
    pack.finalize();
    await this.container.putArchive(pack as unknown as NodeJS.ReadableStream, { path: dir });
  }

  diff(): Promise<string> {
    return treeDiff(this, this.baseCommit);
  }

  restore(state: EnvState): Promise<void> {
    return restoreState(this, state);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    live.delete(this);
    await this.container.remove({ force: true }).catch(() => {});
  }
}
