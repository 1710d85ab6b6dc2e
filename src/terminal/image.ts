/**
 * The image a Terminal-Bench task runs in, built from the task's own Dockerfile:
 *
 * - Every image the task names (each FROM, or task.toml's docker_image) is had before the
 *   build: the engine's own, or pulled from its registry through a mirror where one is
 *   named (sandbox/registry.ts), its digest recorded (`bases`). So the builder never pulls.
 * - A FROM that cannot be had (no registry answers, `--pull never`) is rebased onto the
 *   Debian base image (probe-base:bookworm: Debian bookworm, python3, pytest, git); the
 *   substitution is reported with the image (`notes`) with why, so a reader knows the task
 *   ran on a stand-in. Stage names and images the engine has are kept. A docker_image that
 *   cannot be had is an error: there is nothing to stand in for it.
 * - The build is the task author's recipe, and a third-party task is not trusted with the
 *   host: it runs confined (confined-build.ts). Its steps share a network namespace whose
 *   one way out is probe's proxy to the package indexes the run allows (the distributions'
 *   archives, PyPI, npm, or the user's mirrors: sandbox/build-network.ts), hold no
 *   CAP_NET_RAW, and are cancelled past build_timeout_sec (capped). What needs anything else
 *   fails here, and the error names the step and the refused destination.
 * - A second layer of our own adds tmux (the Terminus shell), the sandbox user
 *   (TERMINAL_UID) owning the task's working directory, root-owned /tests and /logs the user
 *   cannot write (so nothing planted there survives into grading), and a copy of the
 *   working directory as a tar (WORKDIR_SEED): the container's root file system is
 *   read-only and its working directory a size-capped tmpfs (writable.ts), filled from it.
 * - Tags are content hashes of the recipe, the rewritten Dockerfile, the build context's
 *   files and the base images' ids: an unchanged task is built once, across runs.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { EnvironmentError, InputError, ProbeError } from '../errors.ts';
import { BASE_IMAGE } from '../sandbox/docker.ts';
import { imageExists } from '../sandbox/environment-image.ts';
import { buildConfined, type ConfinedBuild } from './confined-build.ts';
import { fromParts, type Instruction, type ParsedDockerfile, parseDockerfile } from './confine-dockerfile.ts';
import { DEFAULT_IMAGE_SOURCES, describeImageSources, type ImageSources } from '../settings/image-sources.ts';
import { acquireImage, type BaseImage, type PullProgress, unavailableImage } from '../sandbox/registry.ts';
import { copyTree, hashTree, readTextFile } from '../util/safe-tree.ts';
import type { TerminalTask } from './task.ts';

/** Part of every tag: a change to how images are made must not reuse ones made the old way. */
const RECIPE = 'terminal-task image v4 (confined build, Dockerfile read as the builder reads it, working directory seed)';
const REPOSITORY = 'probe-terminal';
/** probe's offline uvx (offline/uvx), first on PATH while the tests run: see container.ts. */
const OFFLINE_UVX = join(dirname(fileURLToPath(import.meta.url)), 'offline', 'uvx');
export const OFFLINE_BIN = '/opt/probe/offline-bin';
/** The unprivileged user every command of a terminal sandbox runs as. */
export const TERMINAL_UID = 61_000;
/** The image's working directory as our layer left it (the user's), a tar the container's tmpfs working directory is filled from. */
export const WORKDIR_SEED = '/opt/probe/workdir.tar';

export interface TerminalImage {
  tag: string;
  /** The image's working directory (the task's WORKDIR), where the shell starts. */
  workdir: string;
  /** What was changed because an image could not be had (a FROM rebased on the stand-in), for the report. */
  notes: string[];
  /** The images the task names (its FROMs, or docker_image) as this engine had them: pulled or local, ids and digests. */
  bases: BaseImage[];
}

/** A task's image that did not build on the stand-in: the build's error, with the notice of what was substituted. */
export class TaskImageError extends EnvironmentError {
  constructor(
    error: EnvironmentError,
    readonly notes: readonly string[],
  ) {
    // The notice goes in the error's first line, before the build's output if the line announces it.
    const [first = '', ...rest] = error.message.split('\n');
    const outputFollows = / Its last output:$/.test(first);
    const head = first.replace(/ Its last output:$/, '').replace(/\.?$/, '.');
    const line = `${head} It was built on the stand-in: ${notes.join('; ')}.${outputFollows ? ' Its last output:' : ''}`;
    super([line, ...rest].join('\n'), { cause: error });
  }
}

/**
 * The FROMs of a Dockerfile that name an image, read as the builder reads it
 * (confine-dockerfile.ts `parseDockerfile`: a FROM continued over several lines is one
 * instruction): an earlier stage and `scratch` name none. One walk, so that the images
 * had before the build and the FROMs rebased are the same list.
 */
function imageFroms(parsed: ParsedDockerfile): Array<{ ins: Instruction; flags: string[]; image: string; stage?: string }> {
  const stages = new Set<string>();
  const froms = [];
  for (const ins of parsed.instructions) {
    if (ins.keyword !== 'from') continue;
    const parts = fromParts(ins.rest);
    if (!stages.has(parts.image.toLowerCase()) && parts.image.toLowerCase() !== 'scratch') froms.push({ ins, ...parts });
    if (parts.stage) stages.add(parts.stage.toLowerCase());
  }
  return froms;
}

/**
 * The Dockerfile with every FROM this engine cannot resolve rebased on `base`; `why` says
 * why an image is missing, for the note. It is written back one instruction per line, its
 * parser directives first.
 */
export function rebaseDockerfile(
  text: string,
  has: (image: string) => boolean,
  base: string,
  why: (image: string) => string = () => 'no registry here',
  file = 'Dockerfile',
): { text: string; notes: string[] } {
  const parsed = parseDockerfile(text, file);
  const rebased = new Map(imageFroms(parsed).flatMap((from) => (has(from.image) ? [] : [[from.ins, from] as const])));
  const notes: string[] = [];
  const lines = parsed.instructions.map((ins) => {
    const from = rebased.get(ins);
    if (!from) return ins.text;
    notes.push(`FROM ${from.image} → ${base} (${why(from.image)})`);
    const kept = from.flags.filter((f) => !/^--platform=/i.test(f));
    return ['FROM', ...kept, base, ...(from.stage ? ['AS', from.stage] : [])].join(' ');
  });
  return { text: `${[...parsed.directives, ...lines].join('\n')}\n`, notes };
}

/** The images a Dockerfile's FROMs name, build stages and `scratch` left out, in order. */
export function baseImagesOf(text: string, file = 'Dockerfile'): string[] {
  return [...new Set(imageFroms(parseDockerfile(text, file)).map((from) => from.image))];
}

/** What the hashed or copied tree is called in the errors about its files (the whole task directory is hashed too). */
const CONTEXT = 'the task directory';

/**
 * Content hash of a directory's files (paths, executable bits and bytes, streamed), its
 * links by target; a special file, a link out of it or a file over the caps is an
 * InputError naming it (util/safe-tree.ts), not an endless read.
 */
export function treeHash(dir: string): string {
  return hashTree(dir, { what: CONTEXT });
}

/** Runs one build, confined (confined-build.ts: no host network, no raw sockets, time capped); the error is the failing step's output. */
async function build(docker: Docker, context: string, task: TerminalTask, build: Omit<ConfinedBuild, 'timeoutSec'>): Promise<void> {
  await buildConfined(docker, context, { ...build, timeoutSec: task.buildTimeoutSec });
}

/**
 * Our layer on the task's image: tmux, the sandbox user owning the workdir, root-owned /tests
 * and /logs, the offline uvx, and the workdir's seed (readable by the user, who fills its
 * tmpfs working directory from it; it holds what the working directory showed it at start).
 */
function sandboxLayer(from: string, workdir: string): string {
  const quoted = `'${workdir.replace(/'/g, `'\\''`)}'`;
  const owned = workdir === '/' ? '' : ` && chown -R ${TERMINAL_UID}:${TERMINAL_UID} ${quoted}`;
  const seed = workdir === '/' ? '' : ` && tar -C ${quoted} -cf ${WORKDIR_SEED} . && chmod 0644 ${WORKDIR_SEED}`;
  return [
    `FROM ${from}`,
    'USER root',
    'RUN command -v tmux >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get -q update >/dev/null && apt-get -q install -y --no-install-recommends tmux >/dev/null && apt-get clean && rm -rf /var/lib/apt/lists/*; }',
    `RUN (getent passwd ${TERMINAL_UID} >/dev/null || echo 'agent:x:${TERMINAL_UID}:${TERMINAL_UID}:agent:/tmp:/bin/bash' >> /etc/passwd)` +
      ` && (getent group ${TERMINAL_UID} >/dev/null || echo 'agent:x:${TERMINAL_UID}:' >> /etc/group)` +
      ` && rm -rf /tests /logs && mkdir -m 0755 /tests /logs && mkdir -p -m 0755 /opt/probe${owned}${seed}`,
    `COPY uvx ${OFFLINE_BIN}/uvx`,
    '',
  ].join('\n');
}

const built = new Map<string, Promise<TerminalImage>>();

/** The task's image, built here unless this engine has it already (one build per tag per process). */
export function terminalImage(
  docker: Docker,
  task: TerminalTask,
  sources: ImageSources = DEFAULT_IMAGE_SOURCES,
  progress?: PullProgress,
): Promise<TerminalImage> {
  const key = `${task.dir}\0${JSON.stringify(describeImageSources(sources))}`;
  let image = built.get(key);
  if (!image) {
    image = makeImage(docker, task, sources, progress);
    built.set(key, image);
    image.catch(() => built.delete(key));
  }
  return image;
}

async function makeImage(docker: Docker, task: TerminalTask, sources: ImageSources, progress?: PullProgress): Promise<TerminalImage> {
  let taskImage: string;
  let notes: string[] = [];
  const bases: BaseImage[] = [];
  if (!task.dockerfile) {
    const got = await acquireImage(docker, task.dockerImage!, sources.registry, progress);
    if (got.kind === 'unavailable')
      throw new InputError(
        { file: join(task.dir, 'task.toml'), field: 'environment.docker_image' },
        unavailableImage(task.dockerImage!, got.reason, ['add environment/Dockerfile']),
      );
    bases.push(got.image);
    taskImage = task.dockerImage!;
  } else {
    const original = readTextFile(task.dockerfile, { root: task.dir, what: 'the task directory' });
    if (!(await imageExists(docker, BASE_IMAGE)))
      throw new EnvironmentError(`no Docker image ${BASE_IMAGE} to build terminal tasks on (scripts/docker-base-image.sh builds it)`);
    // Every base image is had before the build (pulled here, through a mirror where named), so the builder never pulls.
    const local = new Set<string>();
    const missing = new Map<string, string>();
    for (const name of baseImagesOf(original, task.dockerfile)) {
      const got = await acquireImage(docker, name, sources.registry, progress);
      if (got.kind === 'unavailable') missing.set(name, got.reason);
      else {
        local.add(name);
        bases.push(got.image);
      }
    }
    const rebased = rebaseDockerfile(
      original,
      (i) => local.has(i),
      BASE_IMAGE,
      (i) => missing.get(i) ?? 'not an image reference',
      task.dockerfile,
    );
    notes = rebased.notes;
    const ids = await Promise.all([BASE_IMAGE, ...local].map(async (i) => (await docker.getImage(i).inspect()).Id));
    const hash = createHash('sha256')
      .update([RECIPE, rebased.text, treeHash(task.environmentDir), ...ids].join('\n'))
      .digest('hex');
    taskImage = `${REPOSITORY}:task-${hash.slice(0, 20)}`;
    if (!(await imageExists(docker, taskImage))) {
      const context = mkdtempSync(join(tmpdir(), 'probe-terminal-'));
      try {
        copyTree(task.environmentDir, context, { what: CONTEXT });
        writeFileSync(join(context, 'Dockerfile'), rebased.text);
        await build(docker, context, task, {
          tag: taskImage,
          what: `the image of task ${task.id} (${task.dockerfile})`,
          dockerfile: task.dockerfile,
          egress: sources.egress,
        });
      } catch (error) {
        // A step that failed on the stand-in may have failed because of it: the notice goes with the error.
        if (error instanceof EnvironmentError && notes.length > 0) throw new TaskImageError(error, notes);
        throw error;
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
    }
  }
  const info = await docker.getImage(taskImage).inspect();
  const workdir = info.Config.WorkingDir || '/';
  const layer = sandboxLayer(taskImage, workdir);
  const uvx = readFileSync(OFFLINE_UVX);
  const tag = `${REPOSITORY}:${createHash('sha256').update([RECIPE, info.Id, layer].join('\n')).update(uvx).digest('hex').slice(0, 20)}`;
  if (!(await imageExists(docker, tag))) {
    const context = mkdtempSync(join(tmpdir(), 'probe-terminal-'));
    try {
      writeFileSync(join(context, 'Dockerfile'), layer);
      writeFileSync(join(context, 'uvx'), uvx, { mode: 0o755 });
      await build(docker, context, task, {
        tag,
        what: `the sandbox layer of task ${task.id}`,
        dockerfile: join(context, 'Dockerfile'),
        egress: sources.egress,
      });
    } catch (error) {
      throw error instanceof ProbeError ? error : new ProbeError(`building task ${task.id}'s sandbox layer failed`, { cause: error });
    } finally {
      rmSync(context, { recursive: true, force: true });
    }
  }
  return { tag, workdir, notes, bases };
}
