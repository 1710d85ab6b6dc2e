/**
 * Regenerates the demo suite: `verifiers/<id>/` (repository, hidden tests, task record)
 * and `trajectories/<id>.<label>.<ext>` (a run recorded in the local sandbox, written in
 * its scaffold's format). Needs bubblewrap. Usage: npx tsx scripts/make-demo-suite.ts [ID...]
 * (with IDs, only those tasks are written again: the others' recorded outputs, timings
 * included, stay as they are).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../src/embedded.ts';
import { JS_TASKS } from './demo-suite/tasks-js.ts';
import { PYTHON_TASKS } from './demo-suite/tasks-python.ts';
import { writeDemoTask } from './demo-suite/record.ts';

export const DEMO_TASKS = [...PYTHON_TASKS, ...JS_TASKS];

const only = process.argv.slice(2);
const unknown = only.filter((id) => !DEMO_TASKS.some((t) => t.id === id));
if (unknown.length) throw new Error(`no demo task ${unknown.join(', ')}`);
if (!only.length) rmSync(join(REPO_ROOT, 'trajectories'), { recursive: true, force: true });
for (const task of DEMO_TASKS.filter((t) => !only.length || only.includes(t.id))) {
  const file = await writeDemoTask(task, REPO_ROOT);
  console.error(`${task.id}: ${file}`);
}
