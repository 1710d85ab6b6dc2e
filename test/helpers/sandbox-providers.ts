/**
 * Every sandbox provider behind one face, for the conformance suite: the local bubblewrap
 * jail and the Docker sandbox as `Sandbox` (types.ts) gives them, and the Terminal-Bench
 * container through the thinnest adapter over what an episode calls (`runCommand`, and its
 * `exec` with standard input for files). Each provider is skipped where its engine is
 * missing, unless CI asked for it (PROBE_REQUIRE_BWRAP, PROBE_REQUIRE_DOCKER).
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { client, DockerSandbox, LABEL } from '../../src/sandbox/docker.ts';
import { LocalSandbox } from '../../src/sandbox/local.ts';
import { bwrapUp } from './bwrap.ts';
import { DEFAULT_OUTPUT_CAP, type ExecResult, type Sandbox } from '../../src/sandbox/types.ts';
import type { LoadedTask } from '../../src/schema/task.ts';
import { TerminalContainer } from '../../src/terminal/container.ts';
import { terminalImage } from '../../src/terminal/image.ts';
import { skipWithoutDocker } from './docker.ts';
import { fixtureTask } from './tasks.ts';
import { shippedTask } from './terminal-attack.ts';

/** A command's result; `output` without the truncation notice a provider appends. */
export type SubjectResult = Pick<ExecResult, 'output' | 'exitCode' | 'timedOut' | 'truncated'>;

/** One open sandbox of a provider, as the checks drive it. */
export interface Subject {
  readonly workdir: string;
  /** Output bytes one command keeps. */
  readonly outputCap: number;
  exec(command: string, timeoutMs?: number): Promise<SubjectResult>;
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, data: Buffer | string): Promise<void>;
  /** Back to the state it opened in; with `patch` (providers with `states` only), that state plus the patch. */
  restore(patch?: string): Promise<void>;
  /** The cumulative patch against the start (providers with `states` only). */
  diff(): Promise<string>;
  close(): Promise<void>;
  /** Containers of this subject the engine still has (none for a provider without containers). */
  containers(): Promise<string[]>;
}

export interface Provider {
  name: string;
  skip: boolean;
  /** Whether its sandboxes are containers (which `containers` finds while they are open). */
  containers: boolean;
  /** Whether it records and restores states (a patch over its base); the terminal container only starts afresh. */
  states: boolean;
  open(): Promise<Subject>;
}

const TIMEOUT_MS = 60_000;

/** A label filter's containers, by id. */
async function labelled(labels: Record<string, string>): Promise<string[]> {
  const filters = { label: [LABEL, ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)] };
  return (await client().listContainers({ all: true, filters })).map((c) => c.Id);
}

/** A `Sandbox` provider as a subject; `containers` finds what it left on the engine. */
function sandboxSubject(sb: Sandbox, task: LoadedTask, containers: () => Promise<string[]>): Subject {
  return {
    workdir: sb.workdir,
    outputCap: DEFAULT_OUTPUT_CAP,
    async exec(command, timeoutMs = TIMEOUT_MS) {
      const r = await sb.exec(command, { timeoutMs });
      return { output: r.output, exitCode: r.exitCode, timedOut: r.timedOut, truncated: r.truncated };
    },
    readFile: (path) => sb.readFile(path),
    writeFile: (path, data) => sb.writeFile(path, data),
    restore: (patch = '') => sb.restore({ base_commit: task.base_commit, patch }),
    diff: () => sb.diff(),
    close: () => sb.close(),
    containers,
  };
}

/** A task of its own per subject: its containers are found by their `probe.task` label. */
async function uniqueTask(): Promise<LoadedTask> {
  return fixtureTask('missing-colon', { instance_id: `conformance-${randomBytes(6).toString('hex')}` });
}

const local: Provider = {
  name: 'local',
  skip: !bwrapUp,
  containers: false,
  states: true,
  async open() {
    const task = await uniqueTask();
    return sandboxSubject(await LocalSandbox.create(task), task, async () => []);
  },
};

const docker: Provider = {
  name: 'docker',
  skip: skipWithoutDocker,
  containers: true,
  states: true,
  async open() {
    const task = await uniqueTask();
    const sb = await DockerSandbox.create(task);
    return sandboxSubject(sb, task, () => labelled({ 'probe.pid': String(process.pid), 'probe.task': task.instance_id }));
  },
};

/** What TerminalContainer.exec appends to output past its cap. */
const TRUNCATED = /\n\[\.\.\. output truncated at (\d+) bytes \.\.\.\]$/;
const TERMINAL_OUTPUT_CAP = 1024 * 1024;

const terminal: Provider = {
  name: 'terminal',
  skip: skipWithoutDocker,
  containers: true,
  states: false,
  async open() {
    const shipped = shippedTask('log-error-report');
    const image = await terminalImage(client(), shipped);
    // An id of its own, for the `probe.task` label its containers carry.
    const task = { ...shipped, id: `conformance-${randomBytes(6).toString('hex')}` };
    let container = await TerminalContainer.start(task, image);
    const files = (command: string, path: string, input?: Buffer | string) =>
      container.exec(command, {
        timeoutMs: TIMEOUT_MS,
        env: { PROBE_PATH: path },
        ...(input === undefined ? {} : { input: () => Readable.from([Buffer.from(input)]) }),
      });
    return {
      workdir: container.workdir,
      outputCap: TERMINAL_OUTPUT_CAP,
      // The bash profile's one command: a fresh shell, every process it left killed after it.
      async exec(command, timeoutMs = TIMEOUT_MS) {
        const r = await container.runCommand(command, timeoutMs);
        const cut = TRUNCATED.exec(r.output);
        return { ...r, output: cut ? r.output.slice(0, cut.index) : r.output, truncated: cut !== null };
      },
      // Output comes back as text: the bytes travel as base64.
      async readFile(path) {
        const r = await files('base64 -w0 -- "$PROBE_PATH"', path);
        if (r.exitCode !== 0) throw new Error(`cannot read ${path}: ${r.output}`);
        return Buffer.from(r.output, 'base64');
      },
      async writeFile(path, data) {
        const r = await files('mkdir -p -- "$(dirname -- "$PROBE_PATH")" && cat > "$PROBE_PATH"', path, data);
        if (r.exitCode !== 0) throw new Error(`cannot write ${path}: ${r.output}`);
      },
      // An episode never restores: each starts in a fresh container of the image.
      async restore(patch) {
        if (patch) throw new Error('the terminal container has no states to restore');
        await container.close();
        container = await TerminalContainer.start(task, image);
      },
      diff: () => Promise.reject(new Error('the terminal container has no states')),
      close: () => container.close(),
      // Every container of this task this process started, by the labels the engine knows them by.
      containers: () => labelled({ 'probe.pid': String(process.pid), 'probe.task': task.id }),
    };
  },
};

export const PROVIDERS: readonly Provider[] = [local, docker, terminal];
