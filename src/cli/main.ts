/**
 * The `probe` command line: one file per verb, this file only wires them and maps errors to exit codes.
 * Only the verb being run is loaded (see verbs.ts): `probe --help` and a verb's start-up pay for
 * nothing they do not use.
 */
import { Command, CommanderError } from 'commander';
import { reportError } from './exit.ts';
import { groupedHelp, VERBS } from './verbs.ts';

const VERSION = process.env.npm_package_version ?? '0.1.0';

/** The program with the verbs named (all of them when none is): each added with its flags, so commander parses and helps it. */
export async function buildProgram(names: readonly string[] = [...VERBS.keys()]): Promise<Command> {
  const program = new Command('probe').version(VERSION).exitOverride();
  program.helpInformation = groupedHelp;
  for (const name of names) {
    const verb = VERBS.get(name);
    if (!verb) continue;
    // addCommand does not pass exitOverride down: without it a usage error would exit 1 from inside commander.
    // A usage error is one line naming the flag (not followed by the whole help): scripts and logs read it at a glance.
    program.addCommand((await verb.load()).exitOverride());
  }
  return program;
}

/** The verb argv asks for (`probe help bpb` is `probe bpb --help`), or undefined for the program's own help and version. */
function requestedVerb(argv: string[]): { names: string[]; argv: string[] } {
  const [first, second] = argv.slice(2);
  if (first === 'help' && second !== undefined && VERBS.has(second)) {
    return { names: [second], argv: [...argv.slice(0, 2), second, '--help'] };
  }
  return { names: first !== undefined && VERBS.has(first) ? [first] : [], argv };
}

/** Runs the CLI; resolves to the process exit code (0 ok, 1 failed run, 2 bad usage, input or environment; see exit.ts). */
export async function main(argv: string[]): Promise<number> {
  // `probe --help | head` closes the pipe early: a reader that has seen enough is not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode === undefined ? 0 : Number(process.exitCode));
    throw error;
  });
  const request = requestedVerb(argv);
  const first = request.argv[2];
  if (request.names.length === 0 && first !== undefined && !first.startsWith('-') && first !== 'help') {
    process.stderr.write(`probe: unknown verb '${first}' (one of: ${[...VERBS.keys()].join(', ')}; probe --help lists them)\n`);
    return 2;
  }
  try {
    const program = await buildProgram(request.names);
    if (first === 'help') {
      process.stdout.write(groupedHelp());
      return 0;
    }
    if (first === undefined) {
      process.stderr.write(groupedHelp()); // as commander does: a bare `probe` is a usage error that shows the help
      return 2;
    }
    await program.parseAsync(request.argv);
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? 0 : 2;
    }
    return reportError(error, (text) => process.stderr.write(text));
  }
}
