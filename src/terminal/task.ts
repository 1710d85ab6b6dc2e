/**
 * Terminal-Bench 2.x tasks read as Harbor publishes them, one directory each:
 *
 *   task.toml            [agent] timeout_sec, [verifier] timeout_sec,
 *                        [environment] build_timeout_sec, cpus, memory_mb (or memory = "2G"),
 *                        docker_image, allow_internet
 *   instruction.md       the task, shown to the model as it is
 *   environment/         the build context: Dockerfile (a compose file that starts more than
 *                        `main`, or sets anything, is refused: one container is what probe runs)
 *   tests/test.sh        the verifier: uploaded to /tests after the episode, it writes
 *                        /logs/verifier/reward.txt (a number) or reward.json
 *   solution/solve.sh    the reference solution, replayed as the reference prefix (optional)
 *
 * Every problem is an InputError naming the file and the field. What a task asks that probe
 * does not give it (several steps, sidecar services, MCP servers, skills, variables from the
 * host, GPUs…) is refused the same way, by name (unsupported.ts), never run to a reward of 0.
 *
 * A task set is someone else's directory: its files are read through util/safe-tree.ts
 * (regular files and directories only, links only when they resolve inside the task's
 * directory, size caps), and the whole directory is checked at load, so a FIFO, a device,
 * a link out of the task or a huge file is refused here, naming it, before a hash, a build
 * or an upload would read it. Timeouts are capped (util/timeout.ts).
 */
import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { basename, join, resolve, sep } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describeCause, InputError } from '../errors.ts';
import { checkTree, readTextFile, regularFile } from '../util/safe-tree.ts';
import { timeoutProblem } from '../util/timeout.ts';
import { COMPOSE_FILES, refuseUnsupported } from './unsupported.ts';

/** Harbor's defaults where task.toml is silent (harbor's TaskConfig). */
export const HARBOR_DEFAULTS = {
  agentTimeoutSec: 600,
  verifierTimeoutSec: 600,
  buildTimeoutSec: 600,
  cpus: 1,
  memoryMb: 2048,
} as const;

export interface TerminalTask {
  /** The directory's name (Harbor's task name). */
  id: string;
  dir: string;
  instruction: string;
  /** The build context and its Dockerfile (absent when the task names a prebuilt image). */
  environmentDir: string;
  dockerfile?: string;
  /** `[environment] docker_image`: a prebuilt image, used as it is when this engine has it. */
  dockerImage?: string;
  testsDir: string;
  /** solution/solve.sh, when the task ships one. */
  solution?: string;
  agentTimeoutSec: number;
  verifierTimeoutSec: number;
  buildTimeoutSec: number;
  cpus: number;
  memoryMb: number;
  /** What task.toml asks; the sandbox keeps the network off whatever it says. */
  allowInternet: boolean;
}

type Table = Record<string, unknown>;

function table(doc: Table, key: string, file: string): Table {
  const value = doc[key];
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InputError({ file, field: key }, 'must be a table');
  return value as Table;
}

function positive(t: Table, section: string, key: string, file: string, fallback: number): number {
  const value = t[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value))
    throw new InputError({ file, field: `${section}.${key}` }, `must be a positive number, not ${JSON.stringify(value)}`);
  return value;
}

/** A timeout in seconds: positive and at most MAX_TIMEOUT_S (util/timeout.ts: a longer one would fire at once in Node). */
function timeout(t: Table, section: string, key: string, file: string, fallback: number): number {
  const value = positive(t, section, key, file, fallback);
  const problem = timeoutProblem(value);
  if (problem) throw new InputError({ file, field: `${section}.${key}` }, problem);
  return value;
}

/** What a task directory is called in the errors about its files. */
const TASK_DIR = 'the task directory';

/** A file of the task: its path when it is a regular file inside the task directory, undefined when absent. */
function taskFile(dir: string, path: string): string | undefined {
  return regularFile(path, { root: dir, what: TASK_DIR }) === undefined ? undefined : path;
}

/** Whether the task has a directory `name`; an InputError when something else stands there. */
function taskDir(dir: string, name: string): boolean {
  const path = join(dir, name);
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st) return false;
  if (!st.isDirectory()) throw new InputError({ file: path }, 'must be a directory of the task (not a link, a file or a special file)');
  return true;
}

/** `memory_mb = 4096`, or the older `memory = "4G"` / `"512M"`. */
function memoryMb(env: Table, file: string): number {
  if (env.memory_mb !== undefined) return positive(env, 'environment', 'memory_mb', file, HARBOR_DEFAULTS.memoryMb);
  if (env.memory === undefined) return HARBOR_DEFAULTS.memoryMb;
  const m = typeof env.memory === 'string' ? /^(\d+(?:\.\d+)?)\s*([MG])i?B?$/i.exec(env.memory.trim()) : null;
  if (!m) throw new InputError({ file, field: 'environment.memory' }, `must look like "2G" or "512M", not ${JSON.stringify(env.memory)}`);
  return Math.round(Number(m[1]) * (m[2]!.toUpperCase() === 'G' ? 1024 : 1));
}

function optionalString(t: Table, section: string, key: string, file: string): string | undefined {
  const value = t[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !value.trim()) throw new InputError({ file, field: `${section}.${key}` }, 'must be a non-empty string');
  return value.trim();
}

export function loadTerminalTask(dirArg: string): TerminalTask {
  const dir = resolve(dirArg);
  const tomlFile = join(dir, 'task.toml');
  if (!taskFile(dir, tomlFile)) throw new InputError({ file: dir }, 'no task.toml here (a Terminal-Bench 2.x task directory)');
  const tomlText = readTextFile(tomlFile, { root: dir, what: TASK_DIR });
  let doc: Table;
  try {
    doc = parseToml(tomlText) as Table;
  } catch (error) {
    throw new InputError({ file: tomlFile }, `not valid TOML: ${describeCause(error)}`, { cause: error });
  }
  const agent = table(doc, 'agent', tomlFile);
  const verifier = table(doc, 'verifier', tomlFile);
  const env = table(doc, 'environment', tomlFile);
  // The whole directory is hashed into the run's manifest, environment/ into the image tag and copied into the
  // build, tests/ uploaded: all checked here, before anything reads them.
  checkTree(dir, { what: TASK_DIR });
  refuseUnsupported(dir, { file: tomlFile, doc, agent, verifier, environment: env, solution: table(doc, 'solution', tomlFile) });

  const instructionFile = join(dir, 'instruction.md');
  if (!taskFile(dir, instructionFile)) throw new InputError({ file: instructionFile }, 'missing: the task has no instruction');
  const instruction = readTextFile(instructionFile, { root: dir, what: TASK_DIR });
  if (!instruction.trim()) throw new InputError({ file: instructionFile }, 'is empty');

  const environmentDir = join(dir, 'environment');
  const dockerImage = optionalString(env, 'environment', 'docker_image', tomlFile);
  const dockerfile = join(environmentDir, 'Dockerfile');
  // A link in environment/ must also stay inside it (the build context holds nothing else).
  const hasEnvironment = taskDir(dir, 'environment');
  if (hasEnvironment) checkTree(environmentDir, { what: "the task's environment/ (the build context)" });
  const hasDockerfile = hasEnvironment && taskFile(dir, dockerfile) !== undefined;
  if (!hasDockerfile && !dockerImage) {
    const compose = hasEnvironment ? COMPOSE_FILES.find((f) => taskFile(dir, join(environmentDir, f))) : undefined;
    throw new InputError(
      { file: compose ? join(environmentDir, compose) : environmentDir },
      compose
        ? 'a compose environment (several containers) is not supported: the protocol runs one container, built from environment/Dockerfile'
        : 'no Dockerfile (environment/Dockerfile) and no [environment] docker_image',
    );
  }

  const testsDir = join(dir, 'tests');
  if (!taskDir(dir, 'tests') || !taskFile(dir, join(testsDir, 'test.sh')))
    throw new InputError({ file: join(testsDir, 'test.sh') }, 'missing: the task has no verifier');
  const hasSolutionDir = taskDir(dir, 'solution');
  const solution = hasSolutionDir ? taskFile(dir, join(dir, 'solution', 'solve.sh')) : undefined;

  const allowInternet = env.allow_internet ?? true;
  if (typeof allowInternet !== 'boolean')
    throw new InputError({ file: tomlFile, field: 'environment.allow_internet' }, 'must be true or false');
  return {
    id: basename(dir),
    dir,
    instruction,
    environmentDir,
    ...(hasDockerfile ? { dockerfile } : {}),
    ...(dockerImage ? { dockerImage } : {}),
    testsDir,
    ...(solution ? { solution } : {}),
    agentTimeoutSec: timeout(agent, 'agent', 'timeout_sec', tomlFile, HARBOR_DEFAULTS.agentTimeoutSec),
    verifierTimeoutSec: timeout(verifier, 'verifier', 'timeout_sec', tomlFile, HARBOR_DEFAULTS.verifierTimeoutSec),
    buildTimeoutSec: timeout(env, 'environment', 'build_timeout_sec', tomlFile, HARBOR_DEFAULTS.buildTimeoutSec),
    cpus: positive(env, 'environment', 'cpus', tomlFile, HARBOR_DEFAULTS.cpus),
    memoryMb: memoryMb(env, tomlFile),
    allowInternet,
  };
}

/**
 * Whether `name` of the set directory `dir` is a task directory. A link there is taken only
 * when it resolves inside the set (a set's link cannot bring in a directory of the host).
 */
function isTaskEntry(dir: string, name: string): boolean {
  if (name.startsWith('.')) return false;
  const path = join(dir, name);
  const st = lstatSync(path);
  if (st.isSymbolicLink()) {
    const target = statSync(path, { throwIfNoEntry: false });
    if (!target?.isDirectory() || !lstatSync(join(path, 'task.toml'), { throwIfNoEntry: false })) return false;
    const real = realpathSync(path);
    if (!real.startsWith(realpathSync(dir) + sep))
      throw new InputError(
        { file: path },
        `is a symbolic link to ${real}, outside the task set's directory: a task directory must be inside it`,
      );
    return true;
  }
  return st.isDirectory() && lstatSync(join(path, 'task.toml'), { throwIfNoEntry: false }) !== undefined;
}

/**
 * The task directories `pathArg` names, unread: itself when it holds a task.toml, else every
 * subdirectory that does, sorted by name. An InputError when it is not a directory or holds none.
 */
export function terminalTaskDirs(pathArg: string): string[] {
  const dir = resolve(pathArg);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new InputError({ file: pathArg }, 'not a directory of Terminal-Bench tasks');
  if (lstatSync(join(dir, 'task.toml'), { throwIfNoEntry: false })) return [dir];
  const dirs = readdirSync(dir)
    .sort()
    .filter((name) => isTaskEntry(dir, name))
    .map((name) => join(dir, name));
  if (dirs.length === 0) throw new InputError({ file: pathArg }, 'no task directories here (each holds a task.toml)');
  return dirs;
}

/** One task directory, or a directory of them (every subdirectory holding a task.toml), sorted by name. */
export function loadTerminalTasks(pathArg: string): TerminalTask[] {
  return terminalTaskDirs(pathArg).map(loadTerminalTask);
}
