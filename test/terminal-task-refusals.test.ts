/**
 * What a Harbor task asks that probe does not give it is refused when the task is loaded, in
 * one line naming the file and the field (src/terminal/unsupported.ts), never run to a silent
 * reward of 0 (issue 38): several steps, sidecar services, MCP servers, skills, variables from
 * the host, GPUs, a readiness check, another user, another working directory.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/errors.ts';
import { loadTerminalTask } from '../src/terminal/task.ts';
import { composeServices } from '../src/terminal/unsupported.ts';
import { hasRealData, real } from './helpers/shared-data.ts';
import { tempDir } from './helpers/paths.ts';

/** A minimal loadable task: task.toml (with `toml` added), instruction, Dockerfile, test.sh. */
function task(toml = '', files: Record<string, string> = {}): string {
  const dir = join(tempDir(), 'a-task');
  const all: Record<string, string> = {
    'task.toml': `version = "1.0"\n[agent]\ntimeout_sec = 60.0\n${toml}`,
    'instruction.md': 'Write hello to /app/out.txt.\n',
    'environment/Dockerfile': 'FROM ubuntu:24.04\nWORKDIR /app\n',
    'tests/test.sh': '#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n',
    ...files,
  };
  for (const [rel, text] of Object.entries(all)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

/** The one-line refusal of the task at `dir`, with its directory left out. */
function refusal(dir: string): string {
  try {
    loadTerminalTask(dir);
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    return message.replaceAll(`${dir}/`, '');
  }
  throw new Error('accepted');
}

const SIDECAR_COMPOSE = [
  '# merged on top of the base config',
  'services:',
  '  main:',
  '    depends_on:',
  '      api-server:',
  '        condition: service_healthy',
  '',
  '  api-server:',
  '    build:',
  '      context: ./api-server',
  '    expose:',
  '    - "5000"',
  '    healthcheck:',
  '      test: ["CMD", "python3", "-c", "import socket"]',
  '  "cache":',
  '    image: redis:7',
  '',
].join('\n');

describe('refusing what probe does not run', () => {
  it('a multi-step task, by its steps (task.toml [[steps]], or a steps/ directory)', () => {
    const steps =
      '[[steps]]\nname = "scaffold"\n[[steps]]\nname = "implement"\n[steps.agent]\ntimeout_sec = 9.0\n[[steps]]\nname = "document"\n';
    expect(refusal(task(steps))).toBe(
      'task.toml: field "steps": a multi-step task (steps scaffold, implement, document); probe runs single-step tasks',
    );
    // The step layout alone, without instruction.md (a multi-step task has one per step).
    const dir = task('', { 'steps/b/instruction.md': 'two', 'steps/a/instruction.md': 'one' });
    expect(refusal(dir)).toBe('steps: a multi-step task (steps a, b); probe runs single-step tasks');
  });

  it('a compose file with sidecars, naming them; one whose main sets anything; one it cannot read', () => {
    expect(refusal(task('', { 'environment/docker-compose.yaml': SIDECAR_COMPOSE }))).toBe(
      'environment/docker-compose.yaml: field "services": declares sidecar services beside main (api-server, cache), which probe never starts: it runs one container, built from environment/Dockerfile',
    );
    expect(
      refusal(task('', { 'environment/docker-compose.yml': 'services:\n  main:\n    environment:\n      - X=1\n    shm_size: 2g\n' })),
    ).toBe(
      'environment/docker-compose.yml: field "services.main": sets environment, shm_size, which probe does not apply: it runs the image of environment/Dockerfile alone',
    );
    expect(refusal(task('', { 'environment/docker-compose.yaml': 'services: {main: {}, db: {image: postgres}}\n' }))).toMatch(
      /^environment\/docker-compose\.yaml: a compose environment probe cannot read/,
    );
    // Declaring nothing is harmless.
    for (const text of ['services:\n  main:\n', 'services: {}\n', '# nothing\n', 'version: "3"\nservices:\n  main: {}\n'])
      expect(loadTerminalTask(task('', { 'environment/docker-compose.yaml': text })).dockerfile).toBeDefined();
  });

  it('reads the services of block-style compose files and the keys each sets', () => {
    expect(composeServices(SIDECAR_COMPOSE)).toEqual(
      new Map([
        ['main', ['depends_on']],
        ['api-server', ['build', 'expose', 'healthcheck']],
        ['cache', ['image']],
      ]),
    );
    expect(composeServices('x-common: &c\n  a: 1\nservices:\n  main:\n    <<: *c\n')).toEqual(new Map([['main', ['<<']]]));
    expect(composeServices('services:\n\tmain:\n')).toBeUndefined();
  });

  it('task.toml fields that need what probe has not, each by name', () => {
    const cases: Array<[string, string]> = [
      [
        '[[environment.mcp_servers]]\nname = "desktop"\ntransport = "streamable-http"\nurl = "http://desktop:8000/mcp"\n',
        'task.toml: field "environment.mcp_servers": MCP servers for the agent (desktop): probe\'s agent has no MCP client, and nothing starts them',
      ],
      [
        '[environment]\nskills_dir = "/skills"\n',
        'task.toml: field "environment.skills_dir": skills for the agent (Harbor copies "/skills" into the agent\'s skills directory): probe offers its agent none',
      ],
      [
        '[environment.env]\nAPI_KEY = "from-the-host"\n',
        'task.toml: field "environment.env": variables Harbor sets in the environment from the host (API_KEY): probe sets none of them',
      ],
      ['[environment]\ngpus = 1\n', `task.toml: field "environment.gpus": 1 GPUs: probe's containers get none`],
      [
        '[environment.healthcheck]\ncommand = "test -f /app/ready"\n',
        'task.toml: field "environment.healthcheck": a readiness check Harbor runs before the agent starts: probe runs none',
      ],
      [
        '[environment]\nworkdir = "/srv"\n',
        `task.toml: field "environment.workdir": "/srv": probe starts the agent in the image's working directory (environment/Dockerfile's WORKDIR /app)`,
      ],
      [
        '[verifier]\nuser = "root"\n',
        'task.toml: field "verifier.user": "root": probe runs the agent and the tests as its own unprivileged user, not another',
      ],
      [
        '[verifier.env]\nEXPECTED = "Hello"\n',
        'task.toml: field "verifier.env": variables for the tests (EXPECTED): probe runs test.sh in its own environment, without them',
      ],
      [
        '[solution.env]\nTOKEN = "x"\n',
        'task.toml: field "solution.env": variables for solve.sh (TOKEN): probe runs solve.sh without them',
      ],
    ];
    for (const [toml, message] of cases) expect(refusal(task(toml))).toBe(message);
  });

  it('accepts what it honours or what changes no reward', () => {
    const toml = [
      'artifacts = ["/app/out.txt"]',
      '[metadata]',
      'difficulty = "easy"',
      '[environment]',
      'cpus = 2',
      'memory_mb = 1024',
      'storage_mb = 10240',
      'gpus = 0',
      'allow_internet = false',
      'mcp_servers = []',
      'workdir = "/app/"',
      '[environment.env]',
      '[verifier.env]',
    ].join('\n');
    expect(loadTerminalTask(task(`${toml}\n`))).toMatchObject({ cpus: 2, memoryMb: 1024, allowInternet: false });
  });

  it('names every problem in the one line: the first as file and field, the others after it', () => {
    const dir = task('[environment]\nskills_dir = "/skills"\n[environment.env]\nA = "1"\n', {
      'environment/docker-compose.yaml': SIDECAR_COMPOSE,
    });
    expect(refusal(dir)).toMatch(
      /^environment\/docker-compose\.yaml: field "services": declares sidecar services .* \(also unsupported: task\.toml "environment\.skills_dir", task\.toml "environment\.env"\)$/,
    );
  });
});

describe.skipIf(!hasRealData)("Harbor's cookbook, loaded", () => {
  const recipe = (name: string) => real(`harbor-cookbook/recipes/${name}`);

  it('loads the single-container recipes and refuses the others by what they need', () => {
    for (const name of ['simple-task', 'multi-reward', 'dns-blacklisting']) expect(loadTerminalTask(recipe(name)).solution).toBeDefined();
    const refused: Record<string, RegExp> = {
      'multi-container': /docker-compose\.yaml: field "services": declares a sidecar service beside main \(api-server\)/,
      'mcp-tools': /\(mcp-server\).* \(also unsupported: task\.toml "environment\.mcp_servers"\)$/,
      'simulated-user': /\(user-server\).* \(also unsupported: task\.toml "environment\.mcp_servers"\)$/,
      'computer-use-ubuntu': /\(desktop\).* \(also unsupported: task\.toml "environment\.mcp_servers"\)$/,
      'computer-use-windows': /\(desktop\).* \(also unsupported: task\.toml "environment\.mcp_servers", task\.toml "environment\.env"\)$/,
      'multi-step': /task\.toml: field "steps": a multi-step task \(steps scaffold, implement, document\); probe runs single-step tasks/,
      skills: /task\.toml: field "environment\.skills_dir"/,
    };
    for (const [name, message] of Object.entries(refused)) expect(refusal(recipe(name)), name).toMatch(message);
  });
});
