/**
 * The ASAP environments, one line each: adding an environment is its folder (the episode
 * environment of asap/loop.ts, its run, and its declaration of asap/environment.ts) and one
 * line here. The CLI's tables, `probe report` and the HTML report iterate this list.
 */
import type { EnvironmentDeclaration, EnvironmentResult } from '../asap/environment.ts';
import type { AsapEnvironment } from '../protocol.ts';
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

export function environmentOf(name: AsapEnvironment): EnvironmentDeclaration<EnvironmentResult> {
  return ENVIRONMENTS.find((e) => e.name === name)!;
}
