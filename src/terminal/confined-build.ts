/**
 * One image build of a task's (or our own) Dockerfile, confined (issue 26, class 3): its
 * steps run in a network namespace of their own whose one way out is probe's proxy
 * (sandbox/build-network.ts), which lets through only the package indexes on the build's
 * allow-list (sandbox/build-egress.ts, issue 38: the base image's archives, the user's
 * mirrors, and unless `--no-public-indexes` Debian's and Ubuntu's archives, PyPI and npm;
 * never the host or loopback unless the user named a mirror there). pip and npm find their
 * indexes through build args the confined Dockerfile declares. None of the steps holds
 * CAP_NET_RAW or CAP_NET_ADMIN (confine-dockerfile.ts), and the build is cancelled past its
 * time, which is the task's build_timeout_sec capped at BUILD_TIMEOUT_CAP_S. A failed build
 * names its step, what the proxy allows and what it refused or could not reach; a cancelled
 * or failed build leaves no container behind: its network goes with every container in it.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { EnvironmentError, InputError } from '../errors.ts';
import { packageBuildArgs } from '../sandbox/build-egress.ts';
import { BUILD_TIMEOUT_CAP_S, type BuildNetwork, describeEgress, withBuildNetwork } from '../sandbox/build-network.ts';
import type { BuildEgress } from '../settings/image-sources.ts';
import { DROP_NET_CAPS_ARCHITECTURES, DROP_NET_CAPS_X86_64 } from './build-step/drop-net-caps.ts';
import { confineDockerfile, type LocalImage, namedImages, STEP_WRAPPER_CONTEXT_NAME, STEP_WRAPPER_PATH } from './confine-dockerfile.ts';

/** Build output kept for the error message (in events). */
const LOG_EVENTS_KEPT = 400;

export interface ConfinedBuild {
  tag: string;
  /** What the task asked for (build_timeout_sec); the build gets at most BUILD_TIMEOUT_CAP_S. */
  timeoutSec: number;
  /** For the messages: `the image of task x (…/Dockerfile)`. */
  what: string;
  /** The Dockerfile the context's was made from, named by a refusal (InputError). */
  dockerfile: string;
  /** What the build may fetch through the proxy (settings/image-sources.ts). */
  egress: BuildEgress;
}

/** The seconds a build is given: what it asked for, at most the cap. */
export function buildSeconds(requested: number): number {
  return Math.min(requested, BUILD_TIMEOUT_CAP_S);
}

let architecture: Promise<string> | undefined;
async function requireWrapperArchitecture(docker: Docker): Promise<void> {
  architecture ??= docker.version().then((v) => v.Arch);
  const arch = await architecture;
  if (!DROP_NET_CAPS_ARCHITECTURES.includes(arch))
    throw new EnvironmentError(
      `this Docker engine runs ${arch} images; task images are built only on x86-64 engines (every build step starts with src/terminal/build-step/drop-net-caps, which is x86-64 code)`,
    );
}

/**
 * The context's Dockerfile confined, declaring the build args `args` (pip's and npm's
 * settings), with the step wrapper beside it (kept even by a .dockerignore).
 */
async function confineContext(docker: Docker, context: string, dockerfile: string, args: readonly string[]): Promise<void> {
  const path = join(context, 'Dockerfile');
  const text = readFileSync(path, 'utf8');
  const images = new Map<string, LocalImage>();
  for (const name of namedImages(text, dockerfile)) {
    const info = await docker
      .getImage(name)
      .inspect()
      .catch(() => undefined);
    if (!info) continue;
    const config = info.Config as { Shell?: string[] | null; OnBuild?: string[] | null } | undefined;
    // A base image's ONBUILD triggers run right after its FROM, before any step of ours: a pulled image is the author's too.
    if (config?.OnBuild?.length)
      throw new InputError(
        { file: dockerfile, field: 'FROM' },
        `image ${name} carries ONBUILD triggers (${config.OnBuild.map((t) => JSON.stringify(t)).join(', ')}), which the builder would run before any step of probe's confinement; use an image without them`,
      );
    images.set(name, { shell: config?.Shell ?? undefined });
  }
  writeFileSync(path, confineDockerfile(text, dockerfile, images, args));
  const wrapper = join(context, STEP_WRAPPER_CONTEXT_NAME);
  rmSync(wrapper, { recursive: true, force: true });
  writeFileSync(wrapper, DROP_NET_CAPS_X86_64);
  chmodSync(wrapper, 0o755);
  const ignore = join(context, '.dockerignore');
  if (existsSync(ignore)) appendFileSync(ignore, `\n!${STEP_WRAPPER_CONTEXT_NAME}\n`);
}

/** Builds `context` (its Dockerfile confined first) as `tag`; the error is the failing step's output. */
export async function buildConfined(docker: Docker, context: string, build: ConfinedBuild): Promise<void> {
  await requireWrapperArchitecture(docker);
  await confineContext(docker, context, build.dockerfile, Object.keys(packageBuildArgs(build.egress)));
  await withBuildNetwork(docker, build.egress, (network) => runBuild(docker, context, build, network));
}

async function runBuild(docker: Docker, context: string, build: ConfinedBuild, network: BuildNetwork): Promise<void> {
  const seconds = buildSeconds(build.timeoutSec);
  const tar = spawn('tar', ['-C', context, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const stream = (await docker.buildImage(tar.stdout, {
    t: build.tag,
    networkmode: network.networkMode,
    buildargs: network.buildArgs,
    rm: true,
    forcerm: true,
  })) as Readable;
  const log: string[] = [];
  /** The builder's last `Step n/m : …` line (the log above keeps only the tail of a long build). */
  let lastStep = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Dropping the connection cancels the build; the network's removal takes the step's container.
      stream.destroy();
      tar.kill();
      const asked =
        seconds < build.timeoutSec
          ? `its build_timeout_sec is ${build.timeoutSec} s, capped at probe's ${BUILD_TIMEOUT_CAP_S} s`
          : 'its build_timeout_sec';
      reject(new EnvironmentError(`building ${build.what} took longer than ${seconds} s (${asked}); the build was cancelled`));
    }, seconds * 1000);
    docker.modem.followProgress(
      stream,
      (error: Error | null, events: Array<{ error?: string }>) => {
        clearTimeout(timer);
        const failed = error?.message ?? events.find((e) => e.error)?.error;
        if (!failed) return resolve();
        const tail = log
          .join('')
          .replace(/\x1b\[[0-9;]*m/g, '')
          .trim()
          .split('\n')
          .slice(-12)
          .join('\n');
        const step = failedStep(lastStep);
        const code = /returned a non-zero code: (\d+)/.exec(failed)?.[1];
        const what = step ? `at ${step} (${code !== undefined ? `exit code ${code}` : failed.trim()})` : `(${failed.trim()})`;
        reject(new EnvironmentError(`building ${build.what} failed ${what}; ${describeEgress(network)}. Its last output:\n${tail}`));
      },
      (event: { stream?: string }) => {
        if (event.stream) log.push(event.stream);
        if (event.stream?.startsWith('Step ')) lastStep = event.stream;
        if (log.length > LOG_EVENTS_KEPT) log.splice(0, log.length - LOG_EVENTS_KEPT);
      },
    );
  });
}

/**
 * The step the build was running when it failed, as the task wrote it: the last `Step n/m :`
 * line of the builder's output, a confined RUN unwrapped (`RUN pip install x`, not the
 * wrapper's exec form).
 */
export function failedStep(log: string): string | undefined {
  const steps = [...log.matchAll(/^Step \d+\/\d+ : (.*)$/gm)];
  const last = steps.at(-1)?.[1]?.trim();
  if (!last) return undefined;
  const m = /^RUN (\[.*\])$/.exec(last);
  let argv: unknown;
  try {
    argv = m ? JSON.parse(m[1]!) : undefined;
  } catch {
    return last;
  }
  if (!Array.isArray(argv) || argv[0] !== STEP_WRAPPER_PATH || !argv.every((a) => typeof a === 'string')) return last;
  const program = argv.slice(1) as string[];
  // A program without a path ran as `/bin/sh -c 'exec "$@"' sh …` (confine-dockerfile.ts): the exec form the task wrote.
  if (program[0] === '/bin/sh' && program[2] === 'exec "$@"') return `RUN ${JSON.stringify(program.slice(4))}`;
  // The shell form: the stage's SHELL (ending in -c, as shells take a command) and the command.
  if (program.length >= 3 && program.at(-2) === '-c') return `RUN ${program.at(-1)}`;
  return `RUN ${JSON.stringify(program)}`;
}
