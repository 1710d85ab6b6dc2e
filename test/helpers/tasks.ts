import { join } from 'node:path';
import type { LoadedTask } from '../../src/schema/task.ts';
import { loadTaskFile } from '../../src/verify/load-task.ts';

export const FIXTURE_TASKS = join(import.meta.dirname, '..', 'fixtures', 'tasks');

export function fixtureTask(name: string, overrides: Partial<LoadedTask> = {}): LoadedTask {
  return { ...loadTaskFile(join(FIXTURE_TASKS, name, 'task.json'))[0]!, ...overrides };
}
