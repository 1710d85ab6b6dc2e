/**
 * What the Terminal-Bench attack tests share: copies of a shipped task to change, a command
 * that plants a file as the model would type it, and one episode driven by the model's
 * commands (typed into the tmux shell, or run with `bash -c`) then graded by the real verifier.
 */
import { appendFileSync, cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EMBEDDED_TERMINAL_TASKS } from '../../src/embedded.ts';
import type { TerminalProfile } from '../../src/terminal/actions.ts';
import { type Grade, TerminalContainer } from '../../src/terminal/container.ts';
import { runTerminalAction } from '../../src/terminal/episode.ts';
import type { TerminalImage } from '../../src/terminal/image.ts';
import { loadTerminalTask, type TerminalTask } from '../../src/terminal/task.ts';
import { tempDir } from './paths.ts';

export function shippedTask(id: string): TerminalTask {
  return loadTerminalTask(join(EMBEDDED_TERMINAL_TASKS, id));
}

/** A copy of a shipped task, its Dockerfile extended by `dockerfile` lines and its files replaced by `files` (relative paths). */
export function taskCopy(id: string, name: string, change: { dockerfile?: string[]; files?: Record<string, string> }): TerminalTask {
  const dir = join(tempDir(), name);
  cpSync(join(EMBEDDED_TERMINAL_TASKS, id), dir, { recursive: true });
  if (change.dockerfile) appendFileSync(join(dir, 'environment', 'Dockerfile'), `${change.dockerfile.join('\n')}\n`);
  for (const [path, text] of Object.entries(change.files ?? {})) writeFileSync(join(dir, path), text);
  return loadTerminalTask(dir);
}

/** The shipped verifier's last lines, after its test command: the reward as Terminal-Bench tasks write it. */
export const WRITE_REWARD = ['if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi'];

/** A test.sh that runs the image's pytest itself, from the working directory, as a third-party task may. */
export function directTestSh(workdir: string, tests = '/tests/test_outputs.py'): string {
  return ['#!/bin/bash', `cd ${workdir}`, `python3 -m pytest ${tests} -rA`, ...WRITE_REWARD, ''].join('\n');
}

/** A shell command that writes `text` to `path` (base64, so any content survives typing). */
export function plant(path: string, text: string, mode = '0644'): string {
  const dir = path.slice(0, path.lastIndexOf('/'));
  return `mkdir -p ${dir} && echo ${Buffer.from(text).toString('base64')} | base64 -d > ${path} && chmod ${mode} ${path}`;
}

/** A module that ends the process with status 0 as soon as it is imported. */
export const EXIT_0 = 'import os\nos._exit(0)\n';

/**
 * Runs the commands as the model's actions in a fresh container of the task, then grades it;
 * `exists`: whether `path` was there after the model's commands.
 */
export async function attack(
  task: TerminalTask,
  image: TerminalImage,
  profile: TerminalProfile,
  commands: string[],
  path?: string,
): Promise<Grade & { exists?: boolean }> {
  const container = await TerminalContainer.start(task, image);
  try {
    for (const command of commands) {
      // Typed into the shell and waited for until the shell is idle again (a compile takes a while), or one `bash -c`.
      if (profile === 'terminus') await container.typeCommand(command, 120_000);
      else await runTerminalAction(container, { kind: 'bash', command }, 120_000);
    }
    const exists = path === undefined ? undefined : (await container.runCommand(`test -e ${path}`, 10_000)).exitCode === 0;
    return { ...(await container.verify(task)), exists };
  } finally {
    await container.close();
  }
}
