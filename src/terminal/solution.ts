/**
 * A task's solution/solve.sh as a reference trajectory: its top-level commands, in order,
 * each one step whose thought is the comment above it. A command ends where the lines so far
 * parse as complete shell (`bash -n`, which parses and runs nothing), so a heredoc, a loop
 * or a `\`-continued line stays one step. The shebang and `set -e`-style lines are dropped:
 * typed into an interactive shell, `set -e` would end the session at the first failure.
 */
import { spawnSync } from 'node:child_process';
import { InputError } from '../errors.ts';
import { readTextFile } from '../util/safe-tree.ts';

export interface SolutionStep {
  thought: string;
  command: string;
}

/** Whether the lines parse as complete shell: bash accepts a heredoc cut by the end of input, with a warning, so that counts as incomplete. */
function parses(script: string): boolean {
  const r = spawnSync('bash', ['-n'], { input: script, encoding: 'utf8', stdio: ['pipe', 'ignore', 'pipe'] });
  return r.status === 0 && !/delimited by end-of-file/.test(r.stderr);
}

const SHELL_OPTIONS = /^set\s+[-+][euxo]+(?:\s+pipefail)?\s*(?:#.*)?$/;

export function solutionSteps(script: string): SolutionStep[] {
  const steps: SolutionStep[] = [];
  let comment: string[] = [];
  let chunk: string[] = [];
  const lines = script.replace(/\r\n/g, '\n').split('\n');
  lines.forEach((line, i) => {
    const trimmed = line.trim();
    if (chunk.length === 0) {
      if (i === 0 && trimmed.startsWith('#!')) return;
      if (!trimmed) return;
      if (trimmed.startsWith('#')) {
        comment.push(trimmed.replace(/^#+\s?/, ''));
        return;
      }
      if (SHELL_OPTIONS.test(trimmed)) return;
    }
    chunk.push(line);
    const text = chunk.join('\n');
    if (!/\\$/.test(line) && parses(text)) {
      const words = comment.join(' ').trim();
      steps.push({ thought: words || `Step ${steps.length + 1} of the reference solution.`, command: text.replace(/\s+$/, '') });
      comment = [];
      chunk = [];
    }
  });
  if (chunk.length > 0) {
    const text = chunk.join('\n').trim();
    if (text) steps.push({ thought: comment.join(' ').trim() || `Step ${steps.length + 1} of the reference solution.`, command: text });
  }
  return steps;
}

export function readSolution(file: string): SolutionStep[] {
  const text = readTextFile(file, { what: "the task's solution/" });
  if (!parses(text)) throw new InputError({ file }, 'is not a shell script bash can parse');
  return solutionSteps(text);
}
