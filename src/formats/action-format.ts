/**
 * What a probe item's format is: how a scaffold (or ASAP's md+xml) writes an action and
 * shows its result. Every probe that samples, parses or renders an action asks its item's
 * format through `formatOf` (registry.ts) instead of comparing names.
 */
import { ProbeError } from '../errors.ts';
import type { TrajectoryAction } from '../schema/trajectory.ts';

/** Action text that does not parse in its format (a sampled or mutated action). */
export class UnparsableAction extends ProbeError {}

/** How the harness answers an action in a multi-step rollout, and what ends the model's next step. */
export interface RolloutTurn {
  observe(output: string, exitCode: number): string;
  /** Stops of every step after the first (the first uses the format's `stops`). */
  readonly nextStops: readonly string[];
}

export interface ActionFormat {
  /** The probe item's `format`: `md+xml`, or `native:<scaffold>` for a scaffold's own text. */
  readonly name: string;
  /** Strings at which a sampled action is complete. */
  readonly stops: readonly string[];
  /** Whether the stop string is part of the action (a closing tag) or only ends it (a fence SWE-agent strips). */
  readonly keepStop: boolean;
  /** The command output inside an observation as this format records it (its wrapper taken off). */
  recordedOutput(observation: string): string;
  /** Action text back to a runnable action; `like` is the gold action, for formats whose text does not name its tool. */
  parse(text: string, like?: TrajectoryAction): TrajectoryAction;
  /** Multi-step rollouts (`probe passk --steps S`); absent where the format is probed one action at a time. */
  readonly rollout?: RolloutTurn;
}

/** A scaffold's own format: `native:<scaffold>`, for trajectories the scaffold wrote. */
export interface NativeFormat extends ActionFormat {
  /** The trajectory format (the importer's name for the scaffold). */
  readonly scaffold: string;
}

/** A sampled completion as action text: the sample, with its stop put back where the format's action includes it. */
export function sampledActionText(format: ActionFormat, sample: { text: string; stop?: string }): string {
  return format.keepStop && sample.stop ? sample.text + sample.stop : sample.text;
}

/** Observations are read as written, with Windows line ends made plain. */
export const plainOutput = (observation: string): string => observation.replace(/\r\n/g, '\n');
