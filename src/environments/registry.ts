/**
 * The ASAP environments, one line each: adding an environment is its folder (the episode
 * environment of asap/loop.ts, its plan of asap/episode-plan.ts, and its declaration of
 * asap/environment.ts) and one line here. `probe asap --env`, the ladder's `--asap-env`,
 * their flags, the CLI's tables, `probe report` and the HTML report iterate this list.
 */
import type { EnvironmentDeclaration, EnvironmentResult } from '../asap/environment.ts';
import { InputError } from '../errors.ts';
import { RESEARCH_ENVIRONMENT } from '../research/environment.ts';
import { SWE_ENVIRONMENT } from '../swe/environment.ts';
import { TERMINAL_ENVIRONMENT } from '../terminal/environment.ts';

/** A declaration read through the shape every environment's result shares (its own columns read its own results). */
const registered = <R extends EnvironmentResult>(declaration: EnvironmentDeclaration<R>) =>
  declaration as unknown as EnvironmentDeclaration<EnvironmentResult>;

/** In the order the report shows them. */
export const ENVIRONMENTS: readonly EnvironmentDeclaration<EnvironmentResult>[] = [
  registered(SWE_ENVIRONMENT),
  registered(TERMINAL_ENVIRONMENT),
  registered(RESEARCH_ENVIRONMENT),
];

/** The names `--env` and `--asap-env` take; the first is the default. */
export const ENVIRONMENT_NAMES: readonly string[] = ENVIRONMENTS.map((e) => e.name);

export function environmentOf(name: string): EnvironmentDeclaration<EnvironmentResult> {
  const found = ENVIRONMENTS.find((e) => e.name === name);
  if (!found) throw new InputError({ file: '--env' }, `no environment ${JSON.stringify(name)}: ${ENVIRONMENT_NAMES.join(', ')}`);
  return found;
}
