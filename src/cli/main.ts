/** The `probe` command line: one file per verb, this file only wires them and maps errors to exit codes. */
import { Command, CommanderError } from 'commander';
import { bpbCommand } from './bpb.ts';
import { buildCommand } from './build.ts';
import { inspectCommand } from './inspect.ts';
import { aptbenchCommand } from './aptbench.ts';
import { asapCommand } from './asap.ts';
import { correlateCommand } from './correlate.ts';
import { mcqCommand } from './mcq.ts';
import { passkCommand } from './passk.ts';
import { screenCommand } from './screen.ts';
import { serveCommand } from './serve.ts';
import { replayCommand } from './replay.ts';
import { demoCommand } from './demo.ts';
import { reportCommand } from './report.ts';
import { reportError } from './exit.ts';
import { setupCommand } from './setup.ts';
import { validateCommand } from './validate.ts';

export function buildProgram(): Command {
  const program = new Command('probe')
    .description('Screen base LLM checkpoints for agentic post-training potential.')
    .version(process.env.npm_package_version ?? '0.1.0')
    .exitOverride()
    .addHelpText(
      'after',
      '\nExit codes: 0 success, 1 failed run, 2 bad usage, input or environment (one line naming the file, field, flag, path or port).\nPROBE_DEBUG=1 adds the stack trace to every error; without it only a bug in probe prints one.',
    );
  program.addCommand(demoCommand());
  program.addCommand(replayCommand());
  program.addCommand(buildCommand());
  program.addCommand(inspectCommand());
  program.addCommand(bpbCommand());
  program.addCommand(mcqCommand());
  program.addCommand(passkCommand());
  program.addCommand(aptbenchCommand());
  program.addCommand(asapCommand());
  program.addCommand(screenCommand());
  program.addCommand(correlateCommand());
  program.addCommand(validateCommand());
  program.addCommand(serveCommand());
  program.addCommand(reportCommand());
  program.addCommand(setupCommand());
  // addCommand does not pass exitOverride down: without it a usage error would exit 1 from inside commander.
  // A usage error is one line naming the flag (not followed by the whole help): scripts and logs read it at a glance.
  for (const command of program.commands) command.exitOverride();
  return program;
}

/** Runs the CLI; resolves to the process exit code (0 ok, 1 failed run, 2 bad usage, input or environment; see exit.ts). */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return process.exitCode === undefined ? 0 : Number(process.exitCode);
  } catch (error) {
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? 0 : 2;
    }
    return reportError(error, (text) => process.stderr.write(text));
  }
}
