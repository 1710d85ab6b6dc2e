/** `probe setup`: checks what the jailed local sandbox needs and, as root, installs what is missing. */
import { Command } from 'commander';
import { canInstall, checkRequirements, ensureRequirements, MissingRequirements } from '../setup/requirements.ts';

interface SetupFlags {
  check?: boolean;
}

export function setupCommand(): Command {
  return new Command('setup')
    .description(
      'Check what the jailed local sandbox needs (bubblewrap with user namespaces; python3, pytest, git in /usr) and install what is missing (as root, with apt-get).',
    )
    .option('--check', 'only report; install nothing (exit 2 when something is missing)')
    .addHelpText('after', '\n`probe demo` runs this first. Without root it prints the apt-get command to run.')
    .action((flags: SetupFlags) => {
      // The table is of the machine after any install; a MissingRequirements error (exit 2) says how to fix the rest.
      const printStatus = () => {
        for (const r of checkRequirements())
          process.stdout.write(`${r.problem ? 'missing' : 'ok     '}  ${r.name}${r.problem ? ` — ${r.problem}` : ''}\n`);
      };
      try {
        ensureRequirements({ install: !flags.check && canInstall(), log: (line) => process.stderr.write(line) });
      } catch (error) {
        if (error instanceof MissingRequirements) printStatus();
        throw error;
      }
      printStatus();
    });
}
