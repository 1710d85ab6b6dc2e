/**
 * The local sandbox runs on the host's own /usr and can install nothing: a task whose
 * `environment` names packages the host lacks is stopped before anything runs, with what
 * is missing and how to get it.
 */
import { spawnSync } from 'node:child_process';
import { InputError } from '../errors.ts';
import { describePackage, environmentPackages } from '../schema/environment.ts';
import type { LoadedTask } from '../schema/task.ts';

/** Which of `packages` dpkg does not list as installed on this host (`ii`); null without dpkg. */
export function missingHostPackages(packages: readonly string[]): string[] | null {
  if (packages.length === 0) return [];
  // Unknown names go to stderr (exit 1); the listed ones come with their status.
  const query = spawnSync('dpkg-query', ['-W', '-f=${Package}\\t${db:Status-Abbrev}\\n', '--', ...packages], { encoding: 'utf8' });
  if (query.error) return null;
  const installed = new Set(
    query.stdout
      .split('\n')
      .filter((line) => /\tii/.test(line))
      .map((line) => line.split('\t')[0]!),
  );
  return packages.filter((name) => !installed.has(name));
}

/** Throws an InputError naming the task's missing packages and the two ways out. */
export function requireHostPackages(task: LoadedTask): void {
  const packages = environmentPackages(task.environment);
  const names = [...packages.keys()];
  const missing = missingHostPackages(names);
  const where = { file: task.file, field: 'environment' };
  if (missing === null) {
    throw new InputError(
      where,
      `names Debian packages (${names.join(' ')}), and this host has no dpkg-query to check them; use --sandbox docker, which builds an image with them`,
    );
  }
  if (missing.length === 0) return;
  throw new InputError(
    where,
    `the local sandbox runs on this host's /usr, which lacks ${missing.map((p) => describePackage(p, packages)).join(', ')}; install them (apt-get install ${missing.join(' ')}) or use --sandbox docker, which builds an image with them`,
  );
}
