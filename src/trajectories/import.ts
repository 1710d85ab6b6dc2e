/** Reads a trajectory file of any supported format into the normalized `Trajectory`. */
import { describeCause, InputError } from '../errors.ts';
import { asapLog } from '../formats/md-xml-format.ts';
import { openHands } from '../formats/openhands.ts';
import { r2eGym } from '../formats/r2e-gym.ts';
import { SCAFFOLDS, type ScaffoldName } from '../formats/registry.ts';
import { sweAgent } from '../formats/swe-agent.ts';
import { Trajectory } from '../schema/trajectory.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../util/json-depth.ts';
import { readInputText } from '../util/safe-tree.ts';
import { importAsap, looksLikeAsap } from './formats/asap.ts';
import { importMiniSweAgent, looksLikeMiniSweAgent, miniSweAgentFormat } from './formats/mini-swe-agent.ts';
import { importOpenHands, looksLikeOpenHands } from './formats/openhands.ts';
import { importR2eGym, looksLikeR2eGym } from './formats/r2e-gym.ts';
import { importSweAgent, looksLikeSweAgent } from './formats/swe-agent.ts';

/** The format of a parsed file (JSON value, or the raw text for ASAP logs). */
export function detectFormat(data: unknown, text: string): ScaffoldName | undefined {
  if (looksLikeAsap(text)) return asapLog.scaffold;
  if (data === undefined) return undefined;
  if (looksLikeSweAgent(data)) return sweAgent.scaffold;
  if (looksLikeOpenHands(data)) return openHands.scaffold;
  if (looksLikeR2eGym(data)) return r2eGym.scaffold;
  if (looksLikeMiniSweAgent(data)) return miniSweAgentFormat(data);
  return undefined;
}

export function importTrajectory(file: string, format?: ScaffoldName): Trajectory {
  // Through safe-tree: a trajectory is a third party's file, and a FIFO or a device in its place must not block or fill memory.
  const text = readInputText(file, 'a trajectory', 'trajectory');
  let data: unknown;
  let jsonError: unknown;
  if (!looksLikeAsap(text)) {
    try {
      data = JSON.parse(text);
    } catch (error) {
      jsonError = error;
    }
  }
  if (data !== undefined) checkDepth(data, file);
  const chosen = format ?? detectFormat(data, text);
  if (!chosen) {
    if (jsonError) throw new InputError({ file }, `not valid JSON (truncated?): ${describeCause(jsonError)}`, { cause: jsonError });
    throw new InputError({ file, field: 'format' }, `cannot tell the trajectory format; pass --format ${SCAFFOLDS.join('|')}`);
  }
  if (chosen !== asapLog.scaffold && data === undefined) {
    throw new InputError({ file }, `not valid JSON (truncated?): ${describeCause(jsonError)}`, { cause: jsonError });
  }
  return chosen === asapLog.scaffold ? checked(importAsap(text, file), chosen) : importTrajectoryData(data, file, chosen);
}

/**
 * Refuses a value nested deeper than any scaffold writes, before the detectors and
 * importers (which stringify and recurse) overflow the stack on it.
 */
function checkDepth(data: unknown, source: string): void {
  if (nestsDeeperThan(data))
    throw new InputError({ file: source }, `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; not read`);
}

/**
 * A trajectory already parsed into one scaffold's shape (a `.traj` object, an OpenHands
 * event list, …), e.g. a row of a trajectory dataset; `source` names where it came from.
 */
export function importTrajectoryData(data: unknown, source: string, format: Exclude<ScaffoldName, typeof asapLog.scaffold>): Trajectory {
  checkDepth(data, source);
  const trajectory = (() => {
    switch (format) {
      case sweAgent.scaffold:
        return importSweAgent(data, source);
      case openHands.scaffold:
        return importOpenHands(data, source);
      case r2eGym.scaffold:
        return importR2eGym(data, source);
      default:
        return importMiniSweAgent(data, source, format);
    }
  })();
  return checked(trajectory, format);
}

function checked(trajectory: Trajectory, format: ScaffoldName): Trajectory {
  if (trajectory.steps.length === 0) throw new InputError({ file: trajectory.source }, `no agent steps found (read as ${format})`);
  return Trajectory.parse(trajectory);
}
