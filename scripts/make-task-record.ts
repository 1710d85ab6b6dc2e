/**
 * Writes `task.json` for a task source directory (`repo/`, `tests-added/`, `meta.json`),
 * computing base_commit and test_patch. Usage: npx tsx scripts/make-task-record.ts DIR…
 */
import { writeTaskRecord } from '../src/verify/task-files.ts';

for (const dir of process.argv.slice(2)) {
  writeTaskRecord(dir);
  console.error(`${dir}/task.json`);
}
