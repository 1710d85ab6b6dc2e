/**
 * `probe task check --terminal DIR…` (issue 38): the oracle run over a Terminal-Bench task
 * set — every task built, its solve.sh run, its tests graded — one row per task, over Harbor's
 * own cookbook (../shared/data/real/harbor-cookbook, Apache-2.0, read in place). Offline
 * (`--pull never`): three recipes build, on the Debian stand-in; the others are refused in one
 * line naming what they need and the file.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { OracleRow } from '../src/terminal/oracle.ts';
import { expectOneLineError, runProbe, runProbeAsync } from './helpers/cli.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { tempDir } from './helpers/paths.ts';
import { hasRealData, real } from './helpers/shared-data.ts';

const COOKBOOK = real('harbor-cookbook/recipes');

/** A set of two tasks that never reach a build: one without solve.sh, one whose task.toml does not parse. */
function brokenSet(): string {
  const set = join(tempDir(), 'set');
  const files: Record<string, string> = {
    'no-solution/task.toml': '[agent]\ntimeout_sec = 60.0\n',
    'no-solution/instruction.md': 'Do it.\n',
    'no-solution/environment/Dockerfile': 'FROM ubuntu:24.04\n',
    'no-solution/tests/test.sh': 'echo 1 > /logs/verifier/reward.txt\n',
    'bad-toml/task.toml': '[agent\n',
  };
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(set, rel, '..'), { recursive: true });
    writeFileSync(join(set, rel), text);
  }
  return set;
}

describe('probe task check: usage', () => {
  it('is a subcommand of probe task, which keeps taking a task source directory', () => {
    const help = runProbe(['task', 'check', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: probe task check/);
    expect(help.stdout).toMatch(/Exit codes: 0 when every task resolved, 1 when any did not/);
    expect(runProbe(['task', '--help']).stdout).toMatch(/probe task check --terminal DIR/);
    // `probe task DIR` is the task record verb as before.
    expectOneLineError(runProbe(['task', join(tempDir(), 'nope'), '--problem', 'x']), /nope: is not a directory/);
  });

  it('bad input is one line, exit 2, before any work', () => {
    expectOneLineError(runProbe(['task', 'check']), /required option '--terminal <dir\.\.\.>' not specified/);
    expectOneLineError(runProbe(['task', 'check', '--terminal', join(tempDir(), 'nope')]), /nope: not a directory of Terminal-Bench tasks/);
    expectOneLineError(runProbe(['task', 'check', '--terminal', tempDir()]), /no task directories here/);
    expectOneLineError(runProbe(['task', 'check', '--terminal', tempDir(), '--concurrency', '0']), /--concurrency/);
  });
});

describe.skipIf(skipWithoutDocker || !hasRealData)("probe task check over Harbor's cookbook (Docker, offline)", () => {
  it('resolves the recipes probe runs, names what the others need, exit 1', { timeout: 900_000 }, async () => {
    const set = brokenSet();
    const run = await runProbeAsync(['task', 'check', '--terminal', COOKBOOK, set, '--pull', 'never', '--json'], {}, 900_000);
    expect(run.code, run.stderr).toBe(1);
    const rows = JSON.parse(run.stdout) as OracleRow[];
    const byTask = new Map(rows.map((r) => [r.task, r]));
    expect([...byTask.keys()]).toEqual([
      'computer-use-ubuntu',
      'computer-use-windows',
      'dns-blacklisting',
      'mcp-tools',
      'multi-container',
      'multi-reward',
      'multi-step',
      'simple-task',
      'simulated-user',
      'skills',
      'bad-toml',
      'no-solution',
    ]);
    for (const name of ['simple-task', 'multi-reward', 'dns-blacklisting']) {
      // multi-reward's reward.json holds two dimensions (correctness, performance): solved when both are 1.
      expect(byTask.get(name), name).toMatchObject({
        resolved: true,
        reward: 1,
        reason: null,
        solution_exit: 0,
        image_reused: expect.any(Boolean),
      });
      expect(byTask.get(name)!.build_seconds).toBeGreaterThanOrEqual(0);
      expect(byTask.get(name)!.notes.join(' ')).toMatch(/FROM ubuntu:24\.04 → probe-base:bookworm/);
    }
    const refused: Record<string, RegExp> = {
      'multi-container':
        /multi-container\/environment\/docker-compose\.yaml: field "services": declares a sidecar service beside main \(api-server\), which probe never starts/,
      'mcp-tools':
        /mcp-tools\/environment\/docker-compose\.yaml: field "services": .*\(mcp-server\).*task\.toml "environment\.mcp_servers"/,
      'simulated-user':
        /simulated-user\/environment\/docker-compose\.yaml: field "services": .*\(user-server\).*task\.toml "environment\.mcp_servers"/,
      'computer-use-ubuntu': /computer-use-ubuntu\/environment\/docker-compose\.yaml: field "services": .*\(desktop\)/,
      'computer-use-windows':
        /computer-use-windows\/environment\/docker-compose\.yaml: field "services": .*\(desktop\).*task\.toml "environment\.env"/,
      'multi-step':
        /multi-step\/task\.toml: field "steps": a multi-step task \(steps scaffold, implement, document\); probe runs single-step tasks/,
      skills: /skills\/task\.toml: field "environment\.skills_dir": skills for the agent/,
      'bad-toml': /bad-toml\/task\.toml: not valid TOML/,
      'no-solution': /^no reference solution \(solution\/solve\.sh\)$/,
    };
    for (const [name, reason] of Object.entries(refused)) {
      // Never built: no build time, no image.
      expect(byTask.get(name), name).toMatchObject({ resolved: false, reward: null, build_seconds: null, image_reused: null });
      expect(byTask.get(name)!.reason, name).toMatch(reason);
      expect(byTask.get(name)!.reason, name).not.toContain('\n');
    }

    // Again, as a table: every image is now the one built before, and the reasons name files inside each task.
    const again = await runProbeAsync(['task', 'check', '--terminal', COOKBOOK, '--pull', 'never', '--concurrency', '4'], {}, 600_000);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stdout).toBe('');
    const line = (task: string) => again.stderr.split('\n').find((l) => l.startsWith(`${task} `)) ?? '';
    expect(again.stderr).toMatch(/^task +resolved +reward +build s +image reused +reason$/m);
    expect(line('simple-task')).toMatch(/^simple-task +yes +1 +\d+\.\d +yes$/);
    expect(line('multi-reward')).toMatch(/^multi-reward +yes +1 +\d+\.\d +yes$/);
    // Its ENTRYPOINT routes the task's domains to a local server through /etc/hosts, the one file root may write.
    expect(line('dns-blacklisting')).toMatch(/^dns-blacklisting +yes +1 +\d+\.\d +yes$/);
    expect(line('multi-container')).toMatch(
      / no +- +- +- +environment\/docker-compose\.yaml: field "services": declares a sidecar service beside main \(api-server\)/,
    );
    expect(again.stderr).toMatch(/\n3 of 10 tasks resolved by their reference solution\n/);

    // Exit 0 when every task resolved.
    const resolved = await runProbeAsync(['task', 'check', '--terminal', join(COOKBOOK, 'simple-task'), '--pull', 'never', '--json']);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject([{ task: 'simple-task', resolved: true, reward: 1, image_reused: true }]);
  });
});
