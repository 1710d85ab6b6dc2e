/** Reads a trajectory file of any supported format into the normalized `Trajectory`. */
import { readFileSync } from 'node:fs';
import { describeCause, InputError } from '../errors.ts';
import { Trajectory, TRAJECTORY_FORMATS, type TrajectoryFormat } from '../schema/trajectory.ts';
import { importAsap, looksLikeAsap } from './formats/asap.ts';
import { importMiniSweAgent, looksLikeMiniSweAgent, miniSweAgentFormat } from './formats/mini-swe-agent.ts';
import { importOpenHands, looksLikeOpenHands } from './formats/openhands.ts';
import { importR2eGym, looksLikeR2eGym } from './formats/r2e-gym.ts';
import { importSweAgent, looksLikeSweAgent } from './formats/swe-agent.ts';

/** The format of a parsed file (JSON value, or the raw text for ASAP logs). */
export function detectFormat(data: unknown, text: string): TrajectoryFormat | undefined {
  if (looksLikeAsap(text)) return 'asap';
  if (data === undefined) return undefined;
  if (looksLikeSweAgent(data)) return 'swe-agent';
  if (looksLikeOpenHands(data)) return 'openhands';
  if (looksLikeR2eGym(data)) return 'r2e-gym';
  if (looksLikeMiniSweAgent(data)) return miniSweAgentFormat(data);
  return undefined;
}

export function importTrajectory(file: string, format?: TrajectoryFormat): Trajectory {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError({ file }, `cannot read trajectory: ${describeCause(error)}`, { cause: error });
  }
  let data: unknown;
  let jsonError: unknown;
  if (!looksLikeAsap(text)) {
    try {
      data = JSON.parse(text);
    } catch (error) {
      jsonError = error;
    }
  }
  const chosen = format ?? detectFormat(data, text);
  if (!chosen) {
    if (jsonError) throw new InputError({ file }, `not valid JSON (truncated?): ${describeCause(jsonError)}`, { cause: jsonError });
    throw new InputError({ file, field: 'format' }, `cannot tell the trajectory format; pass --format ${TRAJECTORY_FORMATS.join('|')}`);
  }
  if (chosen !== 'asap' && data === undefined) {
    throw new InputError({ file }, `not valid JSON (truncated?): ${describeCause(jsonError)}`, { cause: jsonError });
  }
  return chosen === 'asap' ? checked(importAsap(text, file), chosen) : importTrajectoryData(data, file, chosen);
}

/**
 * A trajectory already parsed into one scaffold's shape (a `.traj` object, an OpenHands
 * event list, …), e.g. a row of a trajectory corpus; `source` names where it came from.
 */
export function importTrajectoryData(data: unknown, source: string, format: Exclude<TrajectoryFormat, 'asap'>): Trajectory {
  const trajectory = (() => {
    switch (format) {
      case 'swe-agent':
        return importSweAgent(data, source);
      case 'openhands':
        return importOpenHands(data, source);
      case 'r2e-gym':
        return importR2eGym(data, source);
      case 'mini-swe-agent-1':
      case 'mini-swe-agent-1.1':
        return importMiniSweAgent(data, source, format);
    }
  })();
  return checked(trajectory, format);
}

function checked(trajectory: Trajectory, format: TrajectoryFormat): Trajectory {
  if (trajectory.steps.length === 0) throw new InputError({ file: trajectory.source }, `no agent steps found (read as ${format})`);
  return Trajectory.parse(trajectory);
}
