/**
 * `probe passk` over checkpoints: every checkpoint's samples run in sandboxes of the
 * kind asked for, one pool per task (agents' sandboxes apart from graders'), closed when
 * the last checkpoint is done, also when one fails.
 */
import { type PasskItem, type PasskResult, scorePassk } from '../probes/passk.ts';
import { restoreProbeState, taskForItem } from '../probes/restore.ts';
import { passAtKs } from '../protocol.ts';
import { openSandbox } from '../sandbox/open.ts';
import { TaskPools } from '../sandbox/pool.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { SandboxKind } from '../settings/sandbox-kinds.ts';
import { type Failure, type ScoringRun, scoreCheckpoints } from './checkpoint-loop.ts';

export interface PasskRunSettings {
  n: number;
  steps: number;
  temperature: number;
  topP: number;
  maxTokens: number;
  seed: number;
  sandbox: SandboxKind;
  /** Sandboxes at once, per task. */
  concurrency: number;
}

/** pass@k of every checkpoint of `run` on its items, each item's task from `tasks` (by instance id). */
export async function runPasskOverCheckpoints(
  run: ScoringRun,
  tasks: ReadonlyMap<string, LoadedTask>,
  settings: PasskRunSettings,
): Promise<{ results: PasskResult[]; failures: Failure[] }> {
  const pools = new TaskPools((t) => openSandbox(settings.sandbox, t), settings.concurrency);
  try {
    return await scoreCheckpoints<PasskResult, PasskItem>(run, 'passk', (ckpt, backend, hooks) =>
      scorePassk(
        ckpt,
        backend,
        run.items,
        {
          n: settings.n,
          ks: passAtKs(settings.n),
          steps: settings.steps,
          temperature: settings.temperature,
          topP: settings.topP,
          maxTokens: settings.maxTokens,
          seed: settings.seed,
          taskOf: (item) => taskForItem(tasks.get(item.task)!, item),
          leaseFor: pools.leaseFor,
          gradersFor: pools.gradersFor,
          restore: restoreProbeState,
        },
        hooks,
      ),
    );
  } finally {
    await pools.close();
  }
}
