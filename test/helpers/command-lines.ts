/** Reading `probe …` command lines out of help texts and the README, and checking them against the verbs' real flags. */
import type { Command } from 'commander';
import { VERBS } from '../../src/cli/verbs.ts';

/** Shell words of one command line: quotes group, a backslash-newline continues, a `#` word starts a comment. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const match of line.replace(/\\\n/g, ' ').matchAll(pattern)) {
    if (match[3]?.startsWith('#')) break;
    words.push(match[1] ?? match[2] ?? match[3]!);
  }
  return words;
}

/** Every `npx probe …` / `probe …` command in a text's ```sh blocks, continuation lines joined. */
export function probeCommandsIn(markdown: string): string[] {
  const commands: string[] = [];
  for (const block of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = block[1]!.replace(/\\\n\s*/g, ' ').split('\n');
    for (const line of lines) if (/^\s*(npx )?probe /.test(line)) commands.push(line.trim());
  }
  return commands;
}

/**
 * Why a command line is not a real invocation (an unknown verb, a flag the verb does not take),
 * or undefined when it is one. Flags are checked by name; values are left to the verb.
 */
export async function commandProblem(line: string): Promise<string | undefined> {
  const words = shellWords(line);
  const start = words[0] === 'npx' ? 1 : 0;
  if (words[start] !== 'probe') return `does not start with probe: ${line}`;
  const verb = VERBS.get(words[start + 1] ?? '');
  if (!verb) return `unknown verb ${words[start + 1]}: ${line}`;
  const command: Command = await verb.load();
  const known = new Set(command.options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f))));
  known.add('--help');
  for (const word of words.slice(start + 2)) {
    if (!word.startsWith('-') || word === '-') continue;
    const flag = word.split('=')[0]!;
    if (!known.has(flag)) return `${verb.name} has no flag ${flag}: ${line}`;
  }
  return undefined;
}
