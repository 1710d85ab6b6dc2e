/**
 * Where a verb will write, checked before it does any work: a run directory or output file
 * that cannot be written must cost seconds, not the hours of scoring before the first
 * write (or, for `probe build`, the whole build before its only write).
 *
 * Directories are created one level at a time: Node 20's recursive mkdir never returns
 * under some read-only mounts (`/proc/x`), and each level's own error names the culprit.
 */
import { closeSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { EnvironmentError, InputError, systemErrorCode, systemReason } from '../errors.ts';

/** What is at `path`: a directory, something else, or nothing (also when a parent is a file). */
function kindOf(path: string): 'dir' | 'other' | undefined {
  let stat;
  try {
    stat = statSync(path, { throwIfNoEntry: false });
  } catch (error) {
    if (systemErrorCode(error) === 'ENOTDIR') return undefined;
    throw new EnvironmentError(`${path}: cannot look at this output path: ${systemReason(error)}`, { cause: error });
  }
  return stat === undefined ? undefined : stat.isDirectory() ? 'dir' : 'other';
}

/**
 * Makes `dir` (named on the command line by `flag`) exist as a directory this process can
 * write in; an InputError when the path is taken by a file, an EnvironmentError when the
 * system refuses.
 */
export function ensureOutputDir(dir: string, flag: string): void {
  writableDir(dir, dir, `the ${flag} directory`);
}

/** Checks that `file` (given by `flag`) can be written whole: not a directory, in a directory this process can write in. */
export function checkOutputFile(file: string, flag: string): void {
  if (kindOf(file) === 'dir') throw new InputError({ file }, `${flag} must name a file, and this is a directory`);
  writableDir(dirname(resolve(file)), file, `the directory of ${flag}`);
}

/** `dir` created and writable; messages start with `named` (what the user typed) and say `what` it is for. */
function writableDir(dir: string, named: string, what: string): void {
  const target = resolve(dir);
  const missing: string[] = [];
  let at = target;
  for (let kind = kindOf(at); kind === undefined; kind = kindOf(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
    at = dirname(at);
  }
  if (kindOf(at) === 'other') {
    throw new InputError(
      { file: named },
      `cannot create ${what}: ${at === resolve(named) ? 'it is a file' : `${at} is a file, not a directory`}`,
    );
  }
  for (const level of missing) {
    try {
      mkdirSync(level);
    } catch (error) {
      throw new EnvironmentError(
        `${named}: cannot create ${what}${level === resolve(named) ? '' : ` (${level})`}: ${systemReason(error)}`,
        { cause: error },
      );
    }
  }
  // Permission bits do not tell (root, read-only mounts, ACLs): create and remove a file.
  const probe = resolve(target, `.probe-write-check-${process.pid}`);
  try {
    closeSync(openSync(probe, 'wx'));
    rmSync(probe, { force: true });
  } catch (error) {
    throw new EnvironmentError(`${named}: cannot write in ${what} (${target}): ${systemReason(error)}`, { cause: error });
  }
}
