/**
 * One row of a published trajectory dataset as the normalized `Trajectory`. A row is
 * rebuilt into the shape its scaffold writes and read by that scaffold's importer, so a
 * dataset row and the scaffold's own file give the same steps. Layouts, by the columns
 * that hold the run:
 *
 * - `trajectory`: a list of `{role: system|user|ai, text}` — nebius/SWE-agent-trajectories
 *   (SWE-agent's history) → SWE-agent.
 * - `messages` with `tool_calls` — SWE-Gym OpenHands trajectories (Sampled, SFT),
 *   SWE-smith `tool` rows → OpenHands events.
 * - `messages` whose turns hold `<function=NAME>` calls — R2E-Gym / DeepSWE SFT rows,
 *   SWE-smith `xml` rows → R2E-Gym.
 * - `messages` with ``` command blocks — SWE-smith `ticks` rows → SWE-agent.
 * - `trajectory_steps` — an R2E-Gym / DeepSWE run as its `Trajectory` model dumps it
 *   (`{trajectory_steps, problem_statement, docker_image, ds, reward, output_patch}`) →
 *   R2E-Gym.
 */
import { InputError } from '../../errors.ts';
import type { Row } from '../../datasets/rows.ts';
import type { Trajectory } from '../../schema/trajectory.ts';
import { checkMessageContents, contentText } from '../formats/mini-swe-agent.ts';
import { importTrajectoryData } from '../import.ts';
import { sweAgentTrajFromChat, type ChatTurn } from './swe-agent-history.ts';
import { openHands } from '../../formats/openhands.ts';
import { r2eGym } from '../../formats/r2e-gym.ts';
import { sweAgent } from '../../formats/swe-agent.ts';
import { hasToolCalls, openHandsEventsFromToolCalls, type ToolCallMessage } from './tool-call-messages.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../util/json-depth.ts';

/** Columns any layout reads: a Parquet dataset is read for these only (eval logs, tool schemas and test output are skipped). */
export const TRAJECTORY_COLUMNS = [
  'trajectory',
  'messages',
  'trajectory_steps',
  'problem_statement',
  'docker_image',
  'generated_patch',
  'patch',
  'output_patch',
  'true_output_patch',
] as const;

/** A list column, also when a dataset stores it as a JSON string. */
function listColumn(row: Row, key: string, source: string): unknown[] | undefined {
  let value = row[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch (error) {
      throw new InputError({ file: source, field: key }, 'expected a list (or a JSON string of one), got text that is not JSON', {
        cause: error,
      });
    }
  }
  if (!Array.isArray(value)) throw new InputError({ file: source, field: key }, `expected a list, got ${typeof value}`);
  // A JSON string column is parsed here, after the row's own depth was checked: check it too.
  if (nestsDeeperThan(value))
    throw new InputError({ file: source, field: key }, `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects; not read`);
  value.forEach((item, i) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item))
      throw new InputError({ file: source, field: `${key}.${i}` }, `expected an object, got ${JSON.stringify(item)?.slice(0, 80)}`);
  });
  return value;
}

function text(row: Row, key: string): string | null {
  return typeof row[key] === 'string' ? (row[key] as string) : null;
}

const FUNCTION_CALL = /<function=[\w.-]+>/;

/** nebius rows keep SWE-agent's system prompt in `system_prompt` and the rest in `text`. */
function nebiusTurns(items: unknown[], source: string): ChatTurn[] {
  return items.map((item, i) => {
    const { role, text: body, system_prompt: system } = item as { role?: unknown; text?: unknown; system_prompt?: unknown };
    if (typeof role !== 'string')
      throw new InputError({ file: source, field: `trajectory.${i}.role` }, `expected a string, got ${JSON.stringify(role)}`);
    for (const [value, key] of [
      [body, 'text'],
      [system, 'system_prompt'],
    ] as const) {
      if (value !== undefined && value !== null && typeof value !== 'string')
        throw new InputError(
          { file: source, field: `trajectory.${i}.${key}` },
          `expected a string, got ${JSON.stringify(value)?.slice(0, 80)}`,
        );
    }
    return { role, content: (body as string | null | undefined) || (system as string | null | undefined) || '' };
  });
}

/** A model turn SWE-agent could not parse ran nothing: it is kept as a step that does nothing. */
function markUnparsed(trajectory: Trajectory): Trajectory {
  for (const step of trajectory.steps) {
    if (step.action.text === '') step.action = { text: '', kind: 'other', tool: 'none', args: { reason: 'no command block' } };
  }
  return trajectory;
}

export function rowTrajectory(row: Row, source: string): Trajectory {
  if (row.trajectory_steps !== undefined && row.trajectory_steps !== null) {
    return importTrajectoryData({ ...row, trajectory_steps: listColumn(row, 'trajectory_steps', source) }, source, r2eGym.scaffold);
  }
  const history = listColumn(row, 'trajectory', source);
  if (history) {
    return markUnparsed(
      importTrajectoryData(sweAgentTrajFromChat(nebiusTurns(history, source), text(row, 'generated_patch')), source, sweAgent.scaffold),
    );
  }
  const messages = listColumn(row, 'messages', source) as ToolCallMessage[] | undefined;
  if (!messages)
    throw new InputError(
      { file: source, field: 'messages' },
      'no trajectory in the row (expected a "messages", "trajectory" or "trajectory_steps" column)',
    );
  messages.forEach((m, i) => {
    if (typeof m.role !== 'string')
      throw new InputError({ file: source, field: `messages.${i}.role` }, `expected a string, got ${JSON.stringify(m.role)}`);
  });
  checkMessageContents(messages, source, 'messages');
  const submission = text(row, 'patch') ?? text(row, 'output_patch');
  if (hasToolCalls(messages))
    return importTrajectoryData(openHandsEventsFromToolCalls(messages, source, 'messages'), source, openHands.scaffold);
  if (messages.some((m) => FUNCTION_CALL.test(contentText(m.content)))) {
    return importTrajectoryData(
      { messages, problem_statement: text(row, 'problem_statement') ?? undefined, output_patch: submission ?? undefined },
      source,
      r2eGym.scaffold,
    );
  }
  const turns = messages.map((m) => ({ role: m.role, content: contentText(m.content) }));
  return markUnparsed(importTrajectoryData(sweAgentTrajFromChat(turns, submission), source, sweAgent.scaffold));
}
