/**
 * Reads task records: `verifiers/<id>/task.json`, a directory of them, or a dataset file of
 * rows as published (SWE-bench JSONL / JSON / Parquet, read by src/datasets/rows.ts). What a
 * published row leaves to the harness — test command, log parser, image — is derived from
 * the harness's facts (src/swebench/row-facts.ts); a row's every gap is reported in one error.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { z } from 'zod';
import { InputError } from '../errors.ts';
import { isDatasetFile, readRows, type DatasetRow } from '../datasets/rows.ts';
import { Task, type LoadedTask } from '../schema/task.ts';
import { checkTestLists } from './test-lists.ts';
import { rowFacts, type FieldProblem, type RowFactsOptions } from '../swebench/row-facts.ts';
import { UniqueIds } from '../util/unique-ids.ts';
import { confinedRepo, type RepoConfinement } from './repo-path.ts';
import { taskGit, taskSetConfinement } from '../sandbox/task-git.ts';

/** `taskSetDir`: the directory a repo_path must stay inside (verify/repo-path.ts); `loadTasks` sets it to the directory it reads. */
export type LoadTaskOptions = RowFactsOptions & RepoConfinement;

/** zod's "expected string, received undefined" says "missing". */
function issueMessage(issue: z.core.$ZodIssue): string {
  return issue.code === 'invalid_type' && / received undefined$/.test(issue.message) ? 'missing' : issue.message;
}

/** One error for all of a row's problems, naming the field when there is one. */
function rowError(file: string, { row, index, line }: DatasetRow, problems: FieldProblem[]): InputError {
  const id = typeof row.instance_id === 'string' ? row.instance_id : undefined;
  // JSONL rows are named by line; rows of a JSON list or a Parquet file by position and id.
  const which = line === undefined && index > 0 ? `row ${index + 1}${id ? ` (${id})` : ''}: ` : '';
  if (problems.length === 1)
    return new InputError({ file, line, field: problems[0]!.field || undefined }, `${which}${problems[0]!.message}`);
  // One line, as every input error is: the problems separated by semicolons.
  const list = problems.map((p) => `${p.field ? `field "${p.field}": ` : ''}${p.message}`).join('; ');
  return new InputError({ file, line }, `${which}${problems.length} problems${id ? ` in task ${id}` : ''}: ${list}`);
}

function parseTask(file: string, datasetRow: DatasetRow, options: LoadTaskOptions): LoadedTask {
  const { facts, problems } = rowFacts(datasetRow.row, options);
  const parsed = Task.safeParse({ ...datasetRow.row, ...facts });
  if (!parsed.success) {
    const named = new Set(problems.map((p) => p.field));
    for (const issue of parsed.error.issues) {
      const field = issue.path.join('.');
      if (!named.has(field)) problems.push({ field, message: issueMessage(issue) });
    }
  }
  if (problems.length > 0 || !parsed.success) throw rowError(file, datasetRow, problems);
  // What the loader adds is never the record's: a record's own "repoDir" would name any host directory as its repository.
  const { file: _file, repoDir: _repoDir, repoRoots: _repoRoots, ...task } = parsed.data as LoadedTask;
  checkTestLists(task, { file, line: datasetRow.line });
  if (task.repo_path === undefined) return { ...task, file };
  const where = { file, line: datasetRow.line };
  const repo = confinedRepo(where, task.repo_path, options);
  // Where its .git leads is checked now, before anything runs (the directories git reads are walked when it is checked out).
  taskGit(repo.dir, taskSetConfinement(repo.roots, where), { walk: false });
  return { ...task, file, repoDir: repo.dir, repoRoots: repo.roots };
}

/**
 * Every task of a task file or dataset file (.json, .jsonl, .parquet). `ids` holds the
 * instance ids read so far (of other files too): results are keyed by instance id, so a
 * repeated one is refused.
 */
export async function loadTaskFile(file: string, options: LoadTaskOptions = {}, ids = new UniqueIds('instance_id')): Promise<LoadedTask[]> {
  // A FIFO or a device would block the read, or never end it: only a regular file holds tasks.
  const st = statSync(file, { throwIfNoEntry: false });
  if (st && !st.isFile() && !st.isDirectory()) throw new InputError({ file }, 'is not a regular file (a FIFO, a device or a socket)');
  const tasks: LoadedTask[] = [];
  for await (const row of readRows(file)) {
    const task = parseTask(file, row, options);
    ids.add(task.instance_id, { file, line: row.line }, row.index);
    tasks.push(task);
  }
  if (tasks.length === 0) throw new InputError({ file }, 'holds no task records');
  return tasks;
}

/** A task file, a dataset file, or a directory holding `<id>/task.json` entries and dataset files. */
export async function loadTasks(pathArg: string, options: LoadTaskOptions = {}): Promise<LoadedTask[]> {
  if (!existsSync(pathArg)) throw new InputError({ file: pathArg }, 'no such task file or directory');
  if (!statSync(pathArg).isDirectory()) return loadTaskFile(pathArg, options);
  // A record of the directory may name a repository anywhere inside it (a shared repos/ beside the tasks).
  options = { ...options, taskSetDir: options.taskSetDir ?? pathArg };
  const tasks: LoadedTask[] = [];
  const ids = new UniqueIds('instance_id');
  for (const name of readdirSync(pathArg).sort()) {
    const candidate = join(pathArg, name, 'task.json');
    if (existsSync(candidate)) tasks.push(...(await loadTaskFile(candidate, options, ids)));
    else if (isDatasetFile(name)) tasks.push(...(await loadTaskFile(join(pathArg, name), options, ids)));
  }
  if (tasks.length === 0)
    throw new InputError({ file: pathArg }, 'no task records (expected <id>/task.json, *.jsonl, *.json or *.parquet)');
  return tasks;
}

/** The task a trajectory file belongs to: the longest instance id its file name starts with, then a dot. */
export function taskForTrajectory(file: string, tasks: LoadedTask[]): LoadedTask | undefined {
  const name = basename(file);
  return tasks.filter((t) => name.startsWith(`${t.instance_id}.`)).sort((a, b) => b.instance_id.length - a.instance_id.length)[0];
}
