/** Sandbox providers by name. */
import { InputError } from '../errors.ts';
import type { LoadedTask } from '../schema/task.ts';
import { SANDBOX_KINDS, type SandboxKind } from '../settings/sandbox-kinds.ts';
import { LocalSandbox } from './local.ts';
import type { Sandbox, SandboxOptions } from './types.ts';

export async function openSandbox(kind: SandboxKind, task: LoadedTask, options: SandboxOptions = {}): Promise<Sandbox> {
  switch (kind) {
    case 'local':
      return LocalSandbox.create(task, options);
    case 'docker': {
      const { DockerSandbox } = await import('./docker.ts');
      return DockerSandbox.create(task, options);
    }
    default:
      throw new InputError({ file: '--sandbox' }, `unknown sandbox "${String(kind)}" (expected ${SANDBOX_KINDS.join(' or ')})`);
  }
}
