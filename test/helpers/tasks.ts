import { join } from 'node:path';
import type { LoadedTask } from '../../src/schema/task.ts';
import { loadTaskFile } from '../../src/verify/load-task.ts';

export const FIXTURE_TASKS = join(import.meta.dirname, '..', 'fixtures', 'tasks');

export async function fixtureTask(name: string, overrides: Partial<LoadedTask> = {}): Promise<LoadedTask> {
  return { ...(await loadTaskFile(join(FIXTURE_TASKS, name, 'task.json')))[0]!, ...overrides };
}
