/**
 * The Slurm flags `probe watch` and `probe screen` share, each written once: `--slurm`,
 * `--sbatch` (repeatable, passed to sbatch verbatim) and `--slurm-retries`; and the
 * settings they make, whose job command is this same command line, so a job's settings
 * (and numbers) are its submitter's.
 */
import type { Command } from 'commander';
import { SLURM_DEFAULTS, type SlurmSettings } from '../slurm/settings.ts';
import { nonNegativeInteger } from './args.ts';

export interface SlurmFlags {
  slurm?: boolean;
  sbatch: string[];
  slurmRetries: number;
}

export function addSlurmOptions(command: Command, what: string): Command {
  return command
    .option('--slurm', `${what} in Slurm jobs (sbatch), the engine starting inside the job; probe submits and reads back, Slurm schedules`)
    .option(
      '--sbatch <option>',
      'an sbatch option for every job, as sbatch takes it (repeat: --sbatch=--partition=gpu --sbatch=--gres=gpu:1)',
      (value: string, all: string[]) => [...all, value],
      [] as string[],
    )
    .option(
      '--slurm-retries <n>',
      'submit work again this many times where its job ends without a result (cancelled, pre-empted, timed out)',
      nonNegativeInteger,
      SLURM_DEFAULTS.retries,
    );
}

/** The settings `--slurm` asks for (undefined without it): a job runs this very command, with its job flags added. */
export function slurmSettings(flags: SlurmFlags): SlurmSettings | undefined {
  if (!flags.slurm) return undefined;
  return {
    sbatch: flags.sbatch,
    retries: flags.slurmRetries,
    command: [process.execPath, ...process.execArgv, process.argv[1]!, ...process.argv.slice(2)],
  };
}
