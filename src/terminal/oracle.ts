/**
 * The oracle run over a Terminal-Bench task set (`probe task check --terminal DIR…`): what
 * Harbor's oracle agent does, so that a broken task set is known before any model time is
 * spent. Every task is loaded (one that cannot be, or that asks what probe does not give it,
 * is a row with the one-line reason), its image built (or found built), a fresh container
 * started, its solution/ copied in and solve.sh run as one script, as the sandbox user,
 * in the working directory, within the task's agent timeout (Harbor: `solve.sh >
 * oracle.txt 2>&1` with DEBIAN_FRONTEND=noninteractive), then its tests graded as an
 * episode's are (`verify`). One row per task: resolved, reward, why not, the build's
 * seconds and whether its image was there before this run.
 */
import type Docker from 'dockerode';
import { basename, dirname, relative } from 'node:path';
import { EnvironmentError, InputError, ProbeError } from '../errors.ts';
import { BASE_IMAGE, client, dockerAvailable, rootOwnedTarOf } from '../sandbox/docker.ts';
import { imageExists } from '../sandbox/environment-image.ts';
import type { ImageSources } from '../settings/image-sources.ts';
import { mapLimit } from '../util/pool.ts';
import { readTextFile } from '../util/safe-tree.ts';
import { type CommandResult, TerminalContainer } from './container.ts';
import { HARNESS_PATH } from './grader-env.ts';
import type { BaseImage } from '../sandbox/registry.ts';
import { TaskImageError, type TerminalImage, terminalImage } from './image.ts';
import { loadTerminalTask, type TerminalTask, terminalTaskDirs } from './task.ts';

export interface OracleRow {
  /** The task's name (its directory's). */
  task: string;
  dir: string;
  resolved: boolean;
  /** What the tests wrote; null when the task never reached them, or they wrote none. */
  reward: number | null;
  /** Why it is not resolved, in a line; null when it is. */
  reason: string | null;
  /** Seconds spent getting the image (0 when it was there); null when no build was tried. */
  build_seconds: number | null;
  /** Whether the task's image was in the engine before this run; null when no build was tried. */
  image_reused: boolean | null;
  /** What the image's base could not be had for (a FROM rebased on the stand-in, and why). */
  notes: string[];
  /** The images the task names as they were had: pulled now (from where) or local, ids and registry digests. */
  base_images: BaseImage[];
  /** solve.sh's exit code (124 past the agent's timeout); null when it did not run. */
  solution_exit: number | null;
}

export interface OracleOptions {
  sources: ImageSources;
  /** Tasks checked at once (each a build, then a container). */
  concurrency: number;
  /** A task reached a phase: its image, then its solve.sh and tests. */
  onPhase?: (task: string, phase: 'build' | 'solve') => void;
  /** A task's row is done. */
  onRow?: (row: OracleRow) => void;
  /** An image a task names is being pulled: a line of its progress (`pulling x: 3/7 layers, 120/340 MB`). */
  onPull?: (task: string, line: string) => void;
}

/** Where solution/ is copied: a place the sandbox user can write and run from (/solution is in the read-only root). */
const SOLUTION_DIR = '/tmp/probe-solution';

/** Every task directory the paths name (each a task or a directory of them); bad input (exit 2) before any work. */
export function oracleTaskDirs(paths: readonly string[]): string[] {
  return [...new Set(paths.flatMap((path) => terminalTaskDirs(path)))];
}

function row(dir: string, fields: Partial<OracleRow>): OracleRow {
  return {
    task: basename(dir),
    dir,
    resolved: false,
    reward: null,
    reason: null,
    build_seconds: null,
    image_reused: null,
    notes: [],
    base_images: [],
    solution_exit: null,
    ...fields,
  };
}

/** A message as one line: its first line, at most `max` characters. */
function oneLine(text: string, max = 300): string {
  const line = text.trim().split('\n')[0]!.trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Every image tag this engine has now: an image whose tag is among them was not built by this run. */
async function engineTags(docker: Docker): Promise<Set<string>> {
  const images = await docker.listImages();
  return new Set(images.flatMap((image) => image.RepoTags ?? []));
}

/**
 * How the kernel would run solve.sh, spelled out: /tmp, where the copy is, is mounted noexec.
 * Its shebang's interpreter and argument, or bash for a script without one (what bash does
 * when the kernel refuses a file without a shebang).
 */
function interpreter(task: TerminalTask): string {
  const first = readTextFile(task.solution!, { root: task.dir, what: 'the task directory' }).split('\n', 1)[0]!;
  const m = /^#!\s*(\S+)(?:\s+(.*\S))?\s*$/.exec(first);
  if (!m) return 'bash';
  const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
  return [m[1]!, ...(m[2] ? [m[2]] : [])].map(quote).join(' ');
}

/** solution/ copied in as the sandbox user's, solve.sh run as Harbor's oracle runs it; the copy removed after. */
async function runSolution(container: TerminalContainer, task: TerminalTask): Promise<CommandResult> {
  const copied = await container.exec(
    `rm -rf ${SOLUTION_DIR} && mkdir -m 0700 ${SOLUTION_DIR} && tar -xf - -C ${SOLUTION_DIR} --no-same-owner`,
    {
      timeoutMs: 300_000,
      clean: { PATH: HARNESS_PATH },
      input: () => rootOwnedTarOf(dirname(task.solution!)),
    },
  );
  if (copied.exitCode !== 0) throw new ProbeError(`cannot copy solution/ into the container: ${oneLine(copied.output)}`);
  const script = `${SOLUTION_DIR}/${relative(dirname(task.solution!), task.solution!)}`;
  const ran = await container.exec(`${interpreter(task)} ${script}`, {
    timeoutMs: task.agentTimeoutSec * 1000,
    env: { DEBIAN_FRONTEND: 'noninteractive' },
  });
  // Nothing solve.sh started outlives it, and its copy is not there for the tests (verify kills again).
  await container.killAll();
  await container.exec(`rm -rf ${SOLUTION_DIR}`, { timeoutMs: 60_000, clean: { PATH: HARNESS_PATH } });
  return ran;
}

/** What solve.sh's run adds to the reason of a task that did not resolve. */
function solutionNote(task: TerminalTask, ran: CommandResult): string {
  if (ran.timedOut) return `solve.sh ran past the agent's timeout_sec (${task.agentTimeoutSec} s)`;
  if (ran.exitCode === 0) return 'after solve.sh exited 0';
  const last = ran.output.trim().split('\n').at(-1)?.trim() ?? '';
  return `solve.sh exited ${ran.exitCode}${last ? `: ${oneLine(last, 160)}` : ''}`;
}

/**
 * Why the container did not start, in a line. probe starts `sleep infinity` under the image's
 * ENTRYPOINT, so an entrypoint that fails stops the container while it is being set up (the
 * error is then whatever step met the stopped container): the reason says where it ran.
 */
async function startFailure(docker: Docker, image: TerminalImage, error: ProbeError): Promise<string> {
  const entrypoint = await docker
    .getImage(image.tag)
    .inspect()
    .then((info) => info.Config.Entrypoint as string[] | string | null | undefined)
    .catch(() => undefined);
  const named = Array.isArray(entrypoint) ? entrypoint.join(' ') : entrypoint;
  const message = oneLine(error.message, 200);
  if (!named) return message;
  return `${message} (the image's ENTRYPOINT, ${named}, runs first: as root without capabilities, on a read-only root file system but /etc/hosts)`;
}

async function checkTask(dir: string, docker: Docker, before: ReadonlySet<string>, options: OracleOptions): Promise<OracleRow> {
  let task: TerminalTask;
  try {
    task = loadTerminalTask(dir);
  } catch (error) {
    if (error instanceof InputError) return row(dir, { reason: oneLine(error.message, Number.POSITIVE_INFINITY) });
    throw error;
  }
  if (!task.solution) return row(dir, { task: task.id, reason: 'no reference solution (solution/solve.sh)' });
  options.onPhase?.(task.id, 'build');
  const started = performance.now();
  const seconds = () => Math.round((performance.now() - started) / 100) / 10;
  let image: TerminalImage;
  try {
    image = await terminalImage(docker, task, options.sources, (line) => options.onPull?.(task.id, line));
  } catch (error) {
    // A failed step is the task's (confined-build.ts reports it as an EnvironmentError): the machine was checked first.
    if (!(error instanceof ProbeError)) throw error;
    // The first line names the failed step and what the build's proxy refused: all of it.
    return row(dir, {
      task: task.id,
      reason: `the image did not build: ${oneLine(error.message, Number.POSITIVE_INFINITY).replace(/ Its last output:$/, '')}`,
      build_seconds: seconds(),
      notes: error instanceof TaskImageError ? [...error.notes] : [],
    });
  }
  const built = {
    task: task.id,
    build_seconds: seconds(),
    image_reused: before.has(image.tag),
    notes: image.notes,
    base_images: image.bases,
  };
  options.onPhase?.(task.id, 'solve');
  let container: TerminalContainer;
  try {
    container = await TerminalContainer.start(task, image);
  } catch (error) {
    if (error instanceof EnvironmentError || !(error instanceof ProbeError)) throw error;
    return row(dir, { ...built, reason: await startFailure(docker, image, error) });
  }
  try {
    const ran = await runSolution(container, task);
    const grade = await container.verify(task);
    return row(dir, {
      ...built,
      resolved: grade.resolved,
      reward: grade.reward,
      reason: grade.resolved ? null : `${grade.reason ?? 'not resolved'} (${solutionNote(task, ran)})`,
      solution_exit: ran.exitCode,
    });
  } catch (error) {
    if (error instanceof EnvironmentError || !(error instanceof ProbeError)) throw error;
    return row(dir, { ...built, reason: oneLine(error.message) });
  } finally {
    await container.close();
  }
}

/** The oracle run over every task directory the paths name; rows in the order of the directories. */
export async function oracleRun(paths: readonly string[], options: OracleOptions): Promise<OracleRow[]> {
  const dirs = oracleTaskDirs(paths);
  if (!(await dockerAvailable()))
    throw new EnvironmentError(
      'Terminal-Bench tasks run in Docker and no Docker engine answers (is dockerd running? scripts/start-dockerd.sh starts one)',
    );
  const docker = client();
  if (!(await imageExists(docker, BASE_IMAGE)))
    throw new EnvironmentError(`no Docker image ${BASE_IMAGE} to build terminal tasks on (scripts/docker-base-image.sh builds it)`);
  const before = await engineTags(docker);
  return mapLimit(dirs, options.concurrency, async (dir) => {
    const result = await checkTask(dir, docker, before, options);
    options.onRow?.(result);
    return result;
  });
}
