/**
 * What a Harbor task can ask that probe does not give it, refused by name when the task is
 * loaded (task.ts) instead of run to a reward of 0 that nobody can explain. probe runs one
 * container, built from environment/Dockerfile, with one instruction, an agent that is a
 * base model typing into a shell, and tests graded in its own environment. So:
 *
 * - a multi-step task (task.toml `[[steps]]`, or a steps/ directory) is refused, naming its
 *   steps;
 * - a compose file (environment/docker-compose.yaml) that declares services beside `main`
 *   is refused naming them (nothing would start them), and so is one whose `main` sets
 *   anything (probe applies nothing of the compose file); one that declares nothing is
 *   harmless;
 * - task.toml fields that need what probe has not: MCP servers for the agent, skills,
 *   variables Harbor resolves on the host for the environment, the tests or solve.sh, GPUs,
 *   a readiness check, another user for the agent or the tests, a working directory other
 *   than the image's.
 *
 * Fields probe honours or that change no reward are accepted: timeouts, cpus, memory,
 * docker_image, artifacts, metadata. The network fields (allow_internet, network_mode,
 * allowed_hosts) are read as the rest of probe reads allow_internet: the sandbox has no
 * network whatever they say. storage_mb is not probe's disk cap (writable.ts), but a task
 * that meets the cap is reported ungraded, never graded 0.
 *
 * Every problem found is named: the first as the InputError's file and field, the others
 * after it on the same line.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { InputError } from '../errors.ts';
import { readTextFile } from '../util/safe-tree.ts';

type Table = Record<string, unknown>;

interface Problem {
  file: string;
  field?: string;
  problem: string;
}

/** task.toml as loaded: the whole document and its tables (an absent one is `{}`). */
export interface TaskToml {
  file: string;
  doc: Table;
  agent: Table;
  verifier: Table;
  environment: Table;
  solution: Table;
}

/** What the task directory is called in the errors about its files. */
const TASK_DIR = 'the task directory';

export const COMPOSE_FILES = ['docker-compose.yaml', 'docker-compose.yml'] as const;

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function names(values: readonly string[]): string {
  return values.join(', ');
}

/** `[[steps]]` in task.toml (their names), or a steps/ directory (its subdirectories). */
function multiStep(dir: string, toml: TaskToml): Problem | undefined {
  const declared = toml.doc.steps;
  const stepsDir = join(dir, 'steps');
  const hasDir = lstatSync(stepsDir, { throwIfNoEntry: false })?.isDirectory() ?? false;
  if (declared === undefined && !hasDir) return undefined;
  const stepNames = Array.isArray(declared)
    ? declared.map((s, i) => (isTable(s) && typeof s.name === 'string' && s.name.trim() ? s.name.trim() : `#${i + 1}`))
    : hasDir
      ? readdirSync(stepsDir, { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name)
          .sort()
      : [];
  const problem = `a multi-step task${stepNames.length ? ` (steps ${names(stepNames)})` : ''}; probe runs single-step tasks`;
  return declared !== undefined ? { file: toml.file, field: 'steps', problem } : { file: stepsDir, problem };
}

/**
 * The services of a compose file and the keys each sets, read from block-style YAML (how
 * compose files are written; `yaml` is not a dependency of probe). Undefined when the file
 * says something this reading cannot follow (flow style, tabs): the caller refuses it.
 */
export function composeServices(text: string): Map<string, string[]> | undefined {
  const lines = text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trimEnd())
    .filter((line) => line.trim() !== '' && !/^(---|\.\.\.)$/.test(line.trim()));
  if (lines.some((line) => /^\s*\t/.test(line))) return undefined;
  const KEY = /^\s*("[^"]*"|'[^']*'|[^\s'"#:{[\-?][^:]*?)\s*:(?:\s+(.*))?$/;
  const unquote = (key: string) => key.replace(/^(["'])(.*)\1$/, '$2');
  const start = lines.findIndex((line) => /^services\s*:/.test(line));
  const services = new Map<string, string[]>();
  if (start < 0) return services;
  const inline = lines[start]!.replace(/^services\s*:\s*/, '');
  if (inline) return inline === '{}' ? services : undefined;
  let serviceIndent: number | undefined;
  let keyIndent: number | undefined;
  let keys: string[] | undefined;
  for (const line of lines.slice(start + 1)) {
    const indent = line.length - line.trimStart().length;
    if (indent === 0) break;
    serviceIndent ??= indent;
    if (indent < serviceIndent) return undefined;
    const key = KEY.exec(line);
    if (indent === serviceIndent) {
      if (!key) return undefined;
      keys = [];
      services.set(unquote(key[1]!), keys);
      keyIndent = undefined;
      const value = key[2]?.trim();
      if (value && value !== '{}') return undefined;
      continue;
    }
    keyIndent ??= indent;
    if (indent < keyIndent) return undefined;
    // A sequence may sit at its key's indentation (`expose:` then `- "8000"` under it).
    if (indent === keyIndent && !line.trimStart().startsWith('-')) {
      if (!key) return undefined;
      keys!.push(unquote(key[1]!));
    }
  }
  return services;
}

function compose(dir: string): Problem | undefined {
  const environmentDir = join(dir, 'environment');
  if (!lstatSync(environmentDir, { throwIfNoEntry: false })?.isDirectory()) return undefined; // task.ts names what stands there
  const found = COMPOSE_FILES.map((name) => join(environmentDir, name)).find((path) => lstatSync(path, { throwIfNoEntry: false }));
  if (!found) return undefined;
  const services = composeServices(readTextFile(found, { root: dir, what: TASK_DIR }));
  if (!services)
    return {
      file: found,
      problem:
        'a compose environment probe cannot read (it reads block-style YAML); probe runs one container, built from environment/Dockerfile',
    };
  const sidecars = [...services.keys()].filter((name) => name !== 'main');
  if (sidecars.length)
    return {
      file: found,
      field: 'services',
      problem: `declares ${sidecars.length === 1 ? 'a sidecar service' : 'sidecar services'} beside main (${names(sidecars)}), which probe never starts: it runs one container, built from environment/Dockerfile`,
    };
  const main = services.get('main') ?? [];
  if (main.length)
    return {
      file: found,
      field: 'services.main',
      problem: `sets ${names(main)}, which probe does not apply: it runs the image of environment/Dockerfile alone`,
    };
  return undefined;
}

/** A non-empty table's keys, or undefined. */
function keysOf(t: Table, key: string): string[] | undefined {
  const value = t[key];
  if (value === undefined) return undefined;
  if (isTable(value)) return Object.keys(value).length ? Object.keys(value) : undefined;
  return [JSON.stringify(value)];
}

/** The path the last WORKDIR of a Dockerfile sets (as written), if any. */
function dockerfileWorkdir(text: string): string | undefined {
  const all = [...text.matchAll(/^\s*WORKDIR\s+(\S+)\s*$/gim)];
  return all.at(-1)?.[1];
}

function tomlFields(dir: string, toml: TaskToml): Problem[] {
  const at = (field: string, problem: string): Problem => ({ file: toml.file, field, problem });
  const found: Problem[] = [];
  const env = toml.environment;

  const mcp = env.mcp_servers;
  if (mcp !== undefined && !(Array.isArray(mcp) && mcp.length === 0)) {
    const servers = Array.isArray(mcp) ? mcp.map((s, i) => (isTable(s) && typeof s.name === 'string' ? s.name : `#${i + 1}`)) : [];
    found.push(
      at(
        'environment.mcp_servers',
        `MCP servers for the agent${servers.length ? ` (${names(servers)})` : ''}: probe's agent has no MCP client, and nothing starts them`,
      ),
    );
  }
  if (env.skills_dir !== undefined)
    found.push(
      at(
        'environment.skills_dir',
        `skills for the agent (Harbor copies ${JSON.stringify(env.skills_dir)} into the agent's skills directory): probe offers its agent none`,
      ),
    );
  const variables = keysOf(env, 'env');
  if (variables)
    found.push(
      at('environment.env', `variables Harbor sets in the environment from the host (${names(variables)}): probe sets none of them`),
    );
  if (env.gpus !== undefined && env.gpus !== 0)
    found.push(at('environment.gpus', `${JSON.stringify(env.gpus)} GPUs: probe's containers get none`));
  if (env.healthcheck !== undefined)
    found.push(at('environment.healthcheck', 'a readiness check Harbor runs before the agent starts: probe runs none'));
  if (env.workdir !== undefined) {
    const dockerfile = join(dir, 'environment', 'Dockerfile');
    const image =
      lstatSync(join(dir, 'environment'), { throwIfNoEntry: false })?.isDirectory() &&
      lstatSync(dockerfile, { throwIfNoEntry: false })?.isFile()
        ? dockerfileWorkdir(readTextFile(dockerfile, { root: dir, what: TASK_DIR }))
        : undefined;
    const path = (p: string) => posix.normalize(p).replace(/(.)\/+$/, '$1');
    const wanted = typeof env.workdir === 'string' ? path(env.workdir) : undefined;
    if (wanted === undefined || image === undefined || path(image) !== wanted)
      found.push(
        at(
          'environment.workdir',
          `${JSON.stringify(env.workdir)}: probe starts the agent in the image's working directory${image ? ` (environment/Dockerfile's WORKDIR ${image})` : ''}`,
        ),
      );
  }
  for (const [section, t] of [
    ['agent', toml.agent],
    ['verifier', toml.verifier],
  ] as const)
    if (t.user !== undefined)
      found.push(
        at(`${section}.user`, `${JSON.stringify(t.user)}: probe runs the agent and the tests as its own unprivileged user, not another`),
      );
  const testVariables = keysOf(toml.verifier, 'env');
  if (testVariables)
    found.push(
      at('verifier.env', `variables for the tests (${names(testVariables)}): probe runs test.sh in its own environment, without them`),
    );
  const solutionVariables = keysOf(toml.solution, 'env');
  if (solutionVariables)
    found.push(at('solution.env', `variables for solve.sh (${names(solutionVariables)}): probe runs solve.sh without them`));
  return found;
}

/** Throws an InputError naming everything the task asks that probe does not give it; returns when there is nothing. */
export function refuseUnsupported(dir: string, toml: TaskToml): void {
  const found = [multiStep(dir, toml), compose(dir), ...tomlFields(dir, toml)].filter((p): p is Problem => p !== undefined);
  const [first, ...rest] = found;
  if (!first) return;
  const also = rest.map((p) => `${relative(dir, p.file)}${p.field ? ` "${p.field}"` : ''}`);
  throw new InputError(
    { file: first.file, ...(first.field ? { field: first.field } : {}) },
    `${first.problem}${also.length ? ` (also unsupported: ${names(also)})` : ''}`,
  );
}
