/**
 * Terminal-Bench 2.x tasks read as Harbor publishes them, one directory each:
 *
 *   task.toml            [agent] timeout_sec, [verifier] timeout_sec,
 *                        [environment] build_timeout_sec, cpus, memory_mb (or memory = "2G"),
 *                        docker_image, allow_internet
 *   instruction.md       the task, shown to the model as it is
 *   environment/         the build context: Dockerfile (a compose file alone is refused:
 *                        one container is what the protocol runs)
 *   tests/test.sh        the verifier: uploaded to /tests after the episode, it writes
 *                        /logs/verifier/reward.txt (a number) or reward.json
 *   solution/solve.sh    the reference solution, replayed as the reference prefix (optional)
 *
 * Every problem is an InputError naming the file and the field.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describeCause, InputError } from '../errors.ts';

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
  if (!existsSync(tomlFile)) throw new InputError({ file: dir }, 'no task.toml here (a Terminal-Bench 2.x task directory)');
  let doc: Table;
  try {
    doc = parseToml(readFileSync(tomlFile, 'utf8')) as Table;
  } catch (error) {
    throw new InputError({ file: tomlFile }, `not valid TOML: ${describeCause(error)}`, { cause: error });
  }
  const agent = table(doc, 'agent', tomlFile);
  const verifier = table(doc, 'verifier', tomlFile);
  const env = table(doc, 'environment', tomlFile);

  const instructionFile = join(dir, 'instruction.md');
  if (!existsSync(instructionFile)) throw new InputError({ file: instructionFile }, 'missing: the task has no instruction');
  const instruction = readFileSync(instructionFile, 'utf8');
  if (!instruction.trim()) throw new InputError({ file: instructionFile }, 'is empty');

  const environmentDir = join(dir, 'environment');
  const dockerImage = optionalString(env, 'environment', 'docker_image', tomlFile);
  const dockerfile = join(environmentDir, 'Dockerfile');
  const hasDockerfile = existsSync(dockerfile);
  if (!hasDockerfile && !dockerImage) {
    const compose = ['docker-compose.yaml', 'docker-compose.yml'].find((f) => existsSync(join(environmentDir, f)));
    throw new InputError(
      { file: compose ? join(environmentDir, compose) : environmentDir },
      compose
        ? 'a compose environment (several containers) is not supported: the protocol runs one container, built from environment/Dockerfile'
        : 'no Dockerfile (environment/Dockerfile) and no [environment] docker_image',
    );
  }

  const testsDir = join(dir, 'tests');
  if (!existsSync(join(testsDir, 'test.sh')))
    throw new InputError({ file: join(testsDir, 'test.sh') }, 'missing: the task has no verifier');
  const solution = join(dir, 'solution', 'solve.sh');

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
    ...(existsSync(solution) ? { solution } : {}),
    agentTimeoutSec: positive(agent, 'agent', 'timeout_sec', tomlFile, HARBOR_DEFAULTS.agentTimeoutSec),
    verifierTimeoutSec: positive(verifier, 'verifier', 'timeout_sec', tomlFile, HARBOR_DEFAULTS.verifierTimeoutSec),
    buildTimeoutSec: positive(env, 'environment', 'build_timeout_sec', tomlFile, HARBOR_DEFAULTS.buildTimeoutSec),
    cpus: positive(env, 'environment', 'cpus', tomlFile, HARBOR_DEFAULTS.cpus),
    memoryMb: memoryMb(env, tomlFile),
    allowInternet,
  };
}

/** One task directory, or a directory of them (every subdirectory holding a task.toml), sorted by name. */
export function loadTerminalTasks(pathArg: string): TerminalTask[] {
  const dir = resolve(pathArg);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw new InputError({ file: pathArg }, 'not a directory of Terminal-Bench tasks');
  if (existsSync(join(dir, 'task.toml'))) return [loadTerminalTask(dir)];
  const tasks = readdirSync(dir)
    .sort()
    .filter((name) => !name.startsWith('.') && existsSync(join(dir, name, 'task.toml')))
    .map((name) => loadTerminalTask(join(dir, name)));
  if (tasks.length === 0) throw new InputError({ file: pathArg }, 'no task directories here (each holds a task.toml)');
  return tasks;
}
