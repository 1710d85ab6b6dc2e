/**
 * The `docker` sandbox (dockerode): a container from the task's image — or, for tasks with
 * a `repo_path`, from the base image with the repository copied in — jailed as the local
 * sandbox is:
 *
 * - no capabilities (`CapDrop: ALL`, root included), no new privileges, no network, memory
 *   and pid limits, rlimits (types.ts LIMITS) on the container and again in every command;
 * - every command runs as an unprivileged uid of its own (`sandbox`; HOME=/tmp, a size-limited tmpfs), in an in-container
 *   `timeout -k` (docker exec forwards no signals); no process outlives its command;
 * - the repository lives twice: a root-owned, read-only pristine copy of the base tree
 *   (PRISTINE_ROOT) and the workdir, a tmpfs of the sandbox user's. `restore` empties the
 *   workdir and /tmp as that user and copies the pristine tree back, `.git` included;
 * - the disk it can fill is those two tmpfs, sized from one cap and counted in the
 *   container's memory: nothing it writes reaches the host's disk;
 * - nothing else is writable to the sandbox user, so nothing outlives `restore`: root's
 *   world-writable places are made unwritable at set-up, and the places the image leaves
 *   writable to anyone under other owners (which capability-less root cannot change) are
 *   mounted read-only, found by the first container of each image;
 * - files go in and out through commands run as the sandbox user (stdin, stdout), never through
 *   the engine's archive calls, so a link the model planted resolves inside the jail with
 *   the sandbox user's rights.
 *
 * Containers carry labels, so leftovers of a killed run are removed at the next start, and
 * are removed on close and on SIGINT/SIGTERM.
 *
 * A task naming an `environment` runs in an image derived from its own (environment-image.ts):
 * the same jail, in an image with the packages installed.
 */
import { spawn } from 'node:child_process';
import type { Duplex, Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type Docker from 'dockerode';
import { EnvironmentError, InputError, ProbeError } from '../errors.ts';
import { onShutdown } from '../util/shutdown.ts';
import { processAlive } from '../util/process-alive.ts';
import { boundedTimeout, keptDelay } from '../util/timeout.ts';
import { checkTree, UNCAPPED } from '../util/safe-tree.ts';
import { describePackage, environmentPackages } from '../schema/environment.ts';
import type { LoadedTask } from '../schema/task.ts';
import { BASE_IMAGE } from './base-image.ts';
import { DEFAULT_IMAGE_SOURCES, type ImageSources } from '../settings/image-sources.ts';
import { acquireImage, unavailableImage } from './registry.ts';
import { environmentImage, MissingPackagesError } from './environment-image.ts';
import { layoutImage } from './layout-image.ts';
import { diskQuotaBytes } from './disk-quota.ts';
import { EXCLUDE_ARTIFACTS } from './git-state.ts';
import { OutputCapture, STDERR_KEPT } from './output-capture.ts';
import { JailedSandbox, type RawResult, resetTreeScript, type RunOptions } from './through-jail.ts';
import { JAIL_HOME } from './jail.ts';
import { checkoutTemplate, TOOLS_DIR, TOOLS_MOUNT } from './local.ts';
import { DEFAULT_EXEC_TIMEOUT_MS, DEFAULT_OUTPUT_CAP, LIMITS, ulimitCommand, type SandboxOptions } from './types.ts';

export { BASE_IMAGE };
/** Every sandbox container carries it (and `probe.pid`): leftovers of a killed run are found by it. */
export const LABEL = 'probe.sandbox';
/** Where the read-only base tree lives: `${PRISTINE_ROOT}${workdir}`. */
export const PRISTINE_ROOT = '/opt/probe-pristine';
/**
 * Containers share the host's user namespace, and RLIMIT_NPROC counts a uid's processes
 * across all of them: each container's sandbox user gets a uid of its own, from a range no
 * account uses, so a fork bomb in one sandbox cannot starve a concurrent one.
 */
function sandboxUid(): number {
  return 200_000 + Math.floor(Math.random() * 60_000);
}
/** How long past its own timeout the host waits for a container command before cutting its stream. */
const BACKSTOP_MS = 15_000;
/** Root, but with no capability (the container has none): it can only touch what root owns. */
const ROOT_USER = '0:0';
/**
 * The disk a sandbox can fill is tmpfs, nothing on the host's disk: the workdir (three
 * quarters of the cap, `PROBE_SANDBOX_DISK_MB` or 4 GiB) and /tmp, also the home (a quarter).
 * Their pages count in the container's memory, whose limit is the commands' own plus the
 * cap, so a full disk still leaves the commands their memory. Everything else the sandbox
 * user could write is read-only (install, writableOutsideTree).
 */
function diskShares(): { workdir: number; tmp: number } {
  const cap = diskQuotaBytes();
  return { workdir: Math.floor((cap * 3) / 4), tmp: Math.floor(cap / 4) };
}
const MEMORY_BYTES = 4 * 2 ** 30;
/** The engine's own read-only paths, which a container's `ReadonlyPaths` replaces. */
const ENGINE_READONLY_PATHS = ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'];
/** Bytes of writable paths a scan reads before refusing the image. */
const WRITABLE_SCAN_CAP = 256 * 1024;
/** Per image: the places outside the tree its containers mount read-only (found by the first container). */
const writableInImage = new Map<string, string[]>();
const PIDS = 1024;
/** Git identity for commits made in the sandbox (the base image's trees have none configured). */
const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'probe',
  GIT_AUTHOR_EMAIL: 'probe@localhost',
  GIT_COMMITTER_NAME: 'probe',
  GIT_COMMITTER_EMAIL: 'probe@localhost',
};

let docker: Docker | undefined;
/** The one engine client of this process. */
/** dockerode is loaded on the first call, not at start-up (a tenth of a second that most verbs never need). */
export function client(): Docker {
  docker ??= new (createRequire(import.meta.url)('dockerode') as typeof Docker)();
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
  await Promise.all(
    containers
      .filter((c) => {
        const pid = Number(c.Labels['probe.pid']);
        // An owner this process may not signal (EPERM: another user's run) is alive: its containers stay.
        return pid !== process.pid && !processAlive(pid);
      })
      .map((c) =>
        client()
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => {}),
      ),
  );
}

function installSignalCleanup(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  onShutdown(async () => {
    await Promise.allSettled([...live].map((sb) => sb.close()));
  });
}

/**
 * A host directory as a tar stream whose entries are root's and read-only to anyone else.
 * Only regular files, directories and links (stored as links, never followed) go in: a
 * FIFO or a device node is refused, naming it, rather than recreated in the container.
 */
export function rootOwnedTarOf(dir: string): Readable {
  checkTree(dir, { links: 'keep', limits: UNCAPPED, what: 'a directory uploaded into the sandbox' });
  return spawn('tar', ['-C', dir, '--owner=0', '--group=0', '--numeric-owner', '--mode=a+rX,go-w', '-c', '.'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  }).stdout;
}

/** The container's own rlimits: hard ceilings for every process in it, root's included. */
const CONTAINER_ULIMITS = [
  { Name: 'nproc', Soft: LIMITS.processes, Hard: LIMITS.processes },
  { Name: 'data', Soft: LIMITS.memoryBytes, Hard: LIMITS.memoryBytes },
  { Name: 'fsize', Soft: LIMITS.fileBytes, Hard: LIMITS.fileBytes },
  { Name: 'core', Soft: 0, Hard: 0 },
];
/** The same limits, set again by each command's shell (so they hold whatever the engine did). */
const ULIMITS = ulimitCommand();

/**
 * argv of a command run as the sandbox user. The outer shell kills every other process of
 * the user before and after the command (`kill -9 -1` reaches only this container's pid
 * namespace, and spares the shell itself): no process outlives its command, and a
 * background job holding the output pipe cannot keep the exec open. Its own stderr goes
 * to /dev/null so that a killed `timeout` is not reported into the command's output.
 */
function sandboxArgv(seconds: number, command: string, merge: boolean): string[] {
  const inner = `${ULIMITS} || exit 125\n${merge ? 'exec 2>&1\n' : ''}eval "$1"`;
  const outer =
    'exec 3>&2 2>/dev/null; kill -9 -1; timeout -k 5 "$1" bash -c "$2" bash "$3" 2>&3 3>&-; status=$?; kill -9 -1; exit $status';
  return ['bash', '-c', outer, 'bash', String(seconds), inner, command];
}

/** argv of a setup step run as capability-less root: no process killing (root's `sleep` keeps the container up). */
function rootArgv(seconds: number, command: string): string[] {
  return ['timeout', '-k', '5', String(seconds), 'bash', '-c', `set -e\nexec 2>&1\n${command}`];
}

/**
 * The shared reset (through-jail.ts), then shared memory and message queues, which outlive
 * processes; only the user's own entries can go.
 */
const RESET_TREE = resetTreeScript(
  '{ { find /dev/shm /dev/mqueue -mindepth 1 -user "$(id -u)" -delete; ipcrm --all; } >/dev/null 2>&1; true; }',
);

interface DockerRunOptions extends RunOptions {
  /** `uid:gid` to run as instead of the sandbox user (set-up steps run as capability-less root). */
  user?: string;
}

export class DockerSandbox extends JailedSandbox {
  readonly provider = 'docker';
  // The reset command's shell has already killed every process earlier commands left.
  protected readonly reset = { script: RESET_TREE, timeoutMs: 300_000 };
  private closed = false;
  /** Commands run one at a time: each one ends by killing the sandbox user's other processes. */
  private queue: Promise<unknown> = Promise.resolve();
  private readonly pristine: string;

  /** `uid:gid` every command runs as. */
  private readonly user: string;

  private constructor(
    private readonly container: Docker.Container,
    readonly workdir: string,
    private readonly outputCap: number,
    protected readonly baseCommit: string,
    private readonly uid: number,
  ) {
    super();
    this.user = `${uid}:${uid}`;
    this.pristine = `${PRISTINE_ROOT}${workdir}`;
  }

  static async create(task: LoadedTask, options: SandboxOptions = {}): Promise<DockerSandbox> {
    if (!(await dockerAvailable()))
      throw new EnvironmentError('no Docker engine answers (is dockerd running? scripts/start-dockerd.sh starts one)');
    await sweepLeftovers();
    installSignalCleanup();
    const image = await imageFor(task, options.imageSources ?? DEFAULT_IMAGE_SOURCES);
    const known = writableInImage.get(image);
    if (known) return DockerSandbox.start(task, image, known, options);
    // The first container of an image finds where the image lets the sandbox user write; every container of it is
    // made with those places read-only (this one too, made again, when there are any).
    const first = await DockerSandbox.start(task, image, [], options);
    let readOnly: string[];
    try {
      readOnly = await first.writableOutsideTree();
    } catch (error) {
      await first.close();
      throw error;
    }
    writableInImage.set(image, readOnly);
    if (readOnly.length === 0) return first;
    await first.close();
    const sb = await DockerSandbox.start(task, image, readOnly, options);
    const left = await sb.writableOutsideTree().catch(async (error) => {
      await sb.close();
      throw error;
    });
    if (left.length > 0) {
      await sb.close();
      throw new ProbeError(
        `image ${image} still lets the sandbox user write ${left.slice(0, 3).join(', ')} after they were made read-only`,
      );
    }
    return sb;
  }

  /** A container of the image, set up and restored to the base, with `readOnly` mounted read-only. */
  private static async start(task: LoadedTask, image: string, readOnly: string[], options: SandboxOptions): Promise<DockerSandbox> {
    const uid = sandboxUid();
    const disk = diskShares();
    const container = await client()
      .createContainer({
        Image: image,
        Cmd: ['sleep', 'infinity'],
        WorkingDir: '/',
        NetworkDisabled: true,
        Labels: { [LABEL]: '1', 'probe.pid': String(process.pid), 'probe.task': task.instance_id },
        HostConfig: {
          NetworkMode: 'none',
          Memory: MEMORY_BYTES + disk.workdir + disk.tmp,
          PidsLimit: PIDS,
          Init: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Ulimits: CONTAINER_ULIMITS,
          Tmpfs: {
            '/tmp': `rw,nosuid,nodev,size=${disk.tmp},mode=1777`,
            [task.workdir]: `rw,nosuid,nodev,size=${disk.workdir},mode=0755,uid=${uid},gid=${uid}`,
          },
          // Setting the list replaces the engine's own, which is kept.
          ...(readOnly.length > 0 ? { ReadonlyPaths: [...ENGINE_READONLY_PATHS, ...readOnly] } : {}),
        },
      })
      .catch((error: Error) => {
        throw new ProbeError(`cannot create a container from image ${image}: ${error.message}`, { cause: error });
      });
    const sb = new DockerSandbox(container, task.workdir, options.outputCap ?? DEFAULT_OUTPUT_CAP, task.base_commit, uid);
    live.add(sb);
    try {
      await container.start();
      await sb.install(task);
      await sb.restore({ base_commit: task.base_commit, patch: '' });
      await sb.checkHead();
    } catch (error) {
      await sb.close();
      throw error;
    }
    return sb;
  }

  /**
   * Where the sandbox user can write besides the workdir and /tmp (which restore empties):
   * what the image leaves writable to anyone and root does not own (root's is made
   * unwritable at set-up). What is written there would outlive `restore`, into the next
   * use — a grader's next grading among them — so such places are mounted read-only.
   * Directories and files only (a link's target is found where it lies); the topmost.
   */
  private async writableOutsideTree(): Promise<string[]> {
    const r = await this.run(
      // Directories the user cannot list are not entered (what is in them is out of its reach), so the scan ends cleanly.
      'find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /tmp -o -path "$PROBE_WORKDIR" -o -path "$PROBE_BASE_TREE" \\) -prune -o \\( -type d -o -type f \\) -writable -print0 -prune -o -type d \\( ! -readable -o ! -executable \\) -prune',
      { merge: false, cwd: '/', timeoutMs: 300_000, outputCap: WRITABLE_SCAN_CAP },
    );
    if (r.exitCode !== 0)
      throw new ProbeError(
        `cannot find where the image lets the sandbox user write (exit ${r.exitCode}): ${r.stderr.trim().slice(0, 300)}`,
      );
    if (r.truncated)
      throw new ProbeError(
        `the image lets the sandbox user write in more places than probe can make read-only (over ${WRITABLE_SCAN_CAP} bytes of paths)`,
      );
    const paths = r.stdout.toString('latin1').split('\0').filter(Boolean);
    const unnameable = paths.find((p) => Buffer.from(p, 'latin1').toString('utf8').includes('\uFFFD'));
    if (unnameable !== undefined)
      throw new ProbeError(
        `the image lets the sandbox user write ${JSON.stringify(unnameable)}, a path that is not UTF-8 (cannot be made read-only)`,
      );
    return paths.map((p) => Buffer.from(p, 'latin1').toString('utf8'));
  }

  /**
   * Puts the editors and the pristine tree in place as root (a checkout copied in, or the
   * image's own tree moved aside: root owns it, so no capability is needed), and an empty
   * workdir owned by the sandbox user, which `restore` fills.
   */
  private async install(task: LoadedTask): Promise<void> {
    await this.asRoot(`mkdir -p ${TOOLS_MOUNT} "$(dirname "$PROBE_BASE_TREE")" "$(dirname "$PROBE_WORKDIR")"`);
    await this.container.putArchive(rootOwnedTarOf(TOOLS_DIR), { path: TOOLS_MOUNT });
    // The workdir is the sandbox user's tmpfs, empty until restore fills it; an image's own repository is already aside (layout-image.ts).
    if (task.repoDir) {
      await this.asRoot('mkdir "$PROBE_BASE_TREE"');
      await this.container.putArchive(rootOwnedTarOf(checkoutTemplate(task)), { path: this.pristine });
    }
    await this.asRoot(
      [
        `cd "$PROBE_BASE_TREE" && mkdir -p .git/info && ${EXCLUDE_ARTIFACTS}`,
        // Chmod of root's files needs no capability; files of other owners in an image keep their modes.
        'chmod -R a+rX,go-w "$PROBE_BASE_TREE" || true',
        // The sandbox user's account (getpwuid works for tools that ask); /etc/passwd is root's own file.
        `grep -q '^sandbox:' /etc/passwd || echo 'sandbox:x:${this.uid}:${this.uid}:sandbox:${JAIL_HOME}:/bin/bash' >> /etc/passwd`,
        `grep -q '^sandbox:' /etc/group || echo 'sandbox:x:${this.uid}:' >> /etc/group`,
        // What the sandbox user could write outside the workdir and /tmp (/var/tmp, ...) would survive restore.
        'find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /tmp \\) -prune -o -user 0 \\( -type d -o -type f \\) -perm -0002 -print0 | xargs -0r chmod o-w',
      ].join('\n'),
    );
  }

  private async asRoot(script: string): Promise<void> {
    const r = await this.run(script, { merge: true, user: ROOT_USER, cwd: '/', timeoutMs: 300_000, outputCap: 64 * 1024 });
    if (r.exitCode !== 0)
      throw new ProbeError(`setting up the container failed (exit ${r.exitCode}): ${r.stdout.toString('utf8').trim().slice(0, 500)}`);
  }

  private async checkHead(): Promise<void> {
    const head = await this.exec('git rev-parse HEAD', { timeoutMs: 60_000 });
    if (head.exitCode !== 0 || !head.output.startsWith(this.baseCommit)) {
      throw new ProbeError(`the repository in the container is not at base_commit ${this.baseCommit}: ${head.output.trim()}`);
    }
  }

  /** Queues a command behind the ones already running. */
  protected run(command: string, options: DockerRunOptions): Promise<RawResult> {
    const result = this.queue.then(() => this.runNow(command, options));
    this.queue = result.catch(() => {});
    return result;
  }

  private async runNow(command: string, options: DockerRunOptions): Promise<RawResult> {
    if (this.closed) throw new ProbeError('sandbox is closed');
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    keptDelay(timeoutMs + BACKSTOP_MS); // refused before the command starts, not after
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
    const user = options.user ?? this.user;
    const started = performance.now();
    const hasStdin = options.stdin !== undefined;
    const exec = await this.container.exec({
      Cmd: user === this.user ? sandboxArgv(seconds, command, options.merge) : rootArgv(seconds, command),
      User: user,
      AttachStdin: hasStdin,
      AttachStdout: true,
      AttachStderr: true,
      WorkingDir: options.cwd ?? this.workdir,
      Env: this.environment(options.env),
    });
    const stream = await exec.start({ hijack: true, stdin: hasStdin });
    const stdout = new OutputCapture(options.outputCap ?? this.outputCap);
    const stderr = options.merge ? stdout : new OutputCapture(STDERR_KEPT);
    this.container.modem.demuxStream(stream, stdout, stderr);
    const hostTimedOut = await this.finish(stream, options.stdin, timeoutMs);
    const exitCode = hostTimedOut ? 124 : ((await exec.inspect()).ExitCode ?? 1);
    return {
      stdout: stdout.bytes(),
      stderr: options.merge ? '' : stderr.bytes().toString('utf8'),
      exitCode,
      timedOut: hostTimedOut || exitCode === 124 || exitCode === 137,
      truncated: stdout.truncated,
      durationMs: performance.now() - started,
    };
  }

  private environment(extra: Record<string, string> = {}): string[] {
    const env = {
      HOME: JAIL_HOME,
      USER: 'sandbox',
      TMPDIR: '/tmp',
      LANG: 'C.UTF-8',
      PYTHONDONTWRITEBYTECODE: '1',
      TERM: 'dumb',
      PROBE_WORKDIR: this.workdir,
      PROBE_BASE_TREE: this.pristine,
      ...GIT_IDENTITY,
      ...extra,
    };
    return Object.entries(env).map(([k, v]) => `${k}=${v}`);
  }

  /**
   * Feeds stdin (then closes it, so the command sees its end) and waits for the output to
   * end; true when the host-side backstop, for an in-container timeout that could not
   * run, cut it.
   */
  private finish(stream: Duplex, stdin: Buffer | string | undefined, timeoutMs: number): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      const backstop = boundedTimeout(() => {
        stream.destroy();
        resolve(true);
      }, timeoutMs + BACKSTOP_MS);
      const done = () => {
        clearTimeout(backstop);
        resolve(false);
      };
      stream.on('end', done);
      stream.on('close', done);
      stream.on('error', (error) => {
        clearTimeout(backstop);
        reject(new ProbeError(`lost the connection to a container command: ${error.message}`, { cause: error }));
      });
      if (stdin !== undefined) stream.end(stdin);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    live.delete(this);
    await this.container.remove({ force: true }).catch(() => {});
  }
}

/**
 * The task's image (or the base image), derived with the packages its `environment` names;
 * for a task whose repository is the image's own, with it moved aside (layout-image.ts).
 */
async function imageFor(task: LoadedTask, sources: ImageSources): Promise<string> {
  const base = task.image ?? BASE_IMAGE;
  if (task.image) {
    // A SWE-bench row's image (swebench/sweb.eval.x86_64.…): pulled where the engine lacks it, through a mirror where named.
    const got = await acquireImage(client(), task.image, sources.registry);
    if (got.kind === 'unavailable') throw new InputError({ file: task.file, field: 'image' }, unavailableImage(task.image, got.reason));
  }
  const packages = environmentPackages(task.environment);
  try {
    const image = await environmentImage(client(), base, [...packages.keys()], sources.egress);
    return task.repoDir ? image : await layoutImage(client(), image, task.workdir, `${PRISTINE_ROOT}${task.workdir}`);
  } catch (error) {
    if (!(error instanceof MissingPackagesError)) throw error;
    throw new InputError(
      { file: task.file, field: 'environment' },
      `the Debian archive image ${base} installs from has no ${error.packages.map((p) => describePackage(p, packages)).join(', ')}; name the Debian package that provides it under environment.debian`,
      { cause: error },
    );
  }
}
