/** Reads task records: `verifiers/<id>/task.json`, a directory of them, or SWE-bench JSONL rows. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describeCause, InputError } from '../errors.ts';
import { Task, type LoadedTask } from '../schema/task.ts';
import { checkTestLists } from './test-lists.ts';

function parseTask(value: unknown, file: string, line?: number): LoadedTask {
  const parsed = Task.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError({ file, line, field: issue.path.join('.') || undefined }, issue.message);
  }
  const task = parsed.data;
  checkTestLists(task, { file, line });
  let repoDir: string | undefined;
  if (task.repo_path !== undefined) {
    repoDir = resolve(dirname(file), task.repo_path);
    if (!existsSync(repoDir)) throw new InputError({ file, line, field: 'repo_path' }, `repository ${repoDir} does not exist`);
  }
  return { ...task, file, ...(repoDir ? { repoDir } : {}) };
}

export function loadTaskFile(file: string): LoadedTask[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError({ file }, `cannot read task: ${describeCause(error)}`, { cause: error });
  }
  if (file.endsWith('.jsonl')) {
    return text.split('\n').flatMap((row, i) => {
      if (!row.trim()) return [];
      try {
        return [parseTask(JSON.parse(row), file, i + 1)];
      } catch (error) {
        if (error instanceof InputError) throw error;
        throw new InputError({ file, line: i + 1 }, `not valid JSON: ${describeCause(error)}`, { cause: error });
      }
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError({ file }, `not valid JSON: ${describeCause(error)}`, { cause: error });
  }
  return [parseTask(value, file)];
}

/** A task file, a JSONL file, or a directory holding `<id>/task.json` entries. */
export function loadTasks(pathArg: string): LoadedTask[] {
  if (!existsSync(pathArg)) throw new InputError({ file: pathArg }, 'no such task file or directory');
  if (!statSync(pathArg).isDirectory()) return loadTaskFile(pathArg);
  const tasks = readdirSync(pathArg).sort().flatMap((name) => {
    const candidate = join(pathArg, name, 'task.json');
    if (existsSync(candidate)) return loadTaskFile(candidate);
    return name.endsWith('.jsonl') || name.endsWith('.json') ? loadTaskFile(join(pathArg, name)) : [];
  });
  if (tasks.length === 0) throw new InputError({ file: pathArg }, 'no task records (expected <id>/task.json or *.jsonl)');
  return tasks;
}
