/**
 * The task a dataset row ran on: the one its `instance_id` names; for rows that carry no
 * id (R2E-Gym/R2EGym-SFT-Trajectories keeps only `messages`), the one whose problem
 * statement is the issue the agent was given.
 */
import type { LoadedTask } from '../../schema/task.ts';
import type { TrajectoryRow } from './trajectory-rows.ts';

/** The issue inside the scaffolds' task prompts (R2E-Gym's `<github_issue>`, OpenHands' and SWE-smith's `<pr_description>`). */
const ISSUE = /<(github_issue|pr_description)>\s*(?:Consider the following PR description:\s*)?([\s\S]*?)\s*<\/\1>/;

/** Whitespace differs between a dataset's copy of an issue and the task's (CRLF, trailing blanks): compare without it. */
const normalized = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The issue in a trajectory's problem statement: inside the prompt's tags, else the statement itself (SWE-agent's importer has already cut it out). */
export function rowIssue(statement: string | null): string | null {
  if (statement === null) return null;
  return ISSUE.exec(statement)?.[2] ?? statement;
}

/**
 * Undefined when no task matches. A row without an id is parsed to find its issue; a
 * malformed one throws its `InputError` (it is bad input whatever its task).
 */
export function taskForRow(row: TrajectoryRow, tasks: ReadonlyMap<string, LoadedTask>): LoadedTask | undefined {
  if (row.instanceId !== null) return tasks.get(row.instanceId);
  if (row.problem) return undefined;
  const issue = rowIssue(row.trajectory().problemStatement);
  if (issue === null) return undefined;
  const wanted = normalized(issue);
  return [...tasks.values()].find((t) => normalized(t.problem_statement) === wanted);
}
