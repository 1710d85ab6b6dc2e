/**
 * Flags every computing verb shares for where results go and what is reused: the run
 * directory (`--out`, `--resume`) and the cache of deterministic backend calls (on by
 * default; `--cache DIR` moves it, `--no-cache` turns it off).
 */
import type { Command } from 'commander';
import { defaultCacheDir, ResultCache } from '../backends/cache.ts';
import { InputError } from '../errors.ts';

export interface RunFlags {
  out?: string;
  resume?: boolean;
  cache?: string | boolean;
}

export function addRunOptions(
  command: Command,
  outHelp = 'run directory: run.json, <probe>/samples.jsonl as items finish, results.json',
): Command {
  return command
    .option('--out <dir>', outHelp)
    .option('--resume', 'continue the interrupted run in --out, skipping finished work (same settings and checkpoints required)')
    .option('--cache <dir>', 'cache of deterministic backend calls (scores, seeded samples); default: $PROBE_CACHE_DIR or ~/.cache/probe')
    .option('--no-cache', 'compute every backend call afresh');
}

/** The result cache the flags ask for (none with --no-cache). */
export function resultCache(flags: RunFlags): ResultCache | undefined {
  if (flags.cache === false) return undefined;
  return new ResultCache(typeof flags.cache === 'string' ? flags.cache : defaultCacheDir());
}

/** `--resume` means nothing without a run directory to resume. */
export function checkResume(flags: RunFlags): void {
  if (flags.resume && !flags.out) throw new InputError({ file: '--resume' }, 'needs --out DIR: the run directory to continue');
}
