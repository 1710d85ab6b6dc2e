/**
 * The pass@K rung: which items it samples, its token limit on each checkpoint, the
 * sandboxes its samples run in, and the protocol's sampling (protocol.ts).
 */
import type { CompletionBackend } from '../../backends/types.ts';
import { scorePassk, type PasskItem, type PasskResult } from '../../probes/passk.ts';
import { restoreProbeState, taskForItem } from '../../probes/restore.ts';
import { passAtKs, SAMPLING } from '../../protocol.ts';
import { openSandbox } from '../../sandbox/open.ts';
import { TaskPools } from '../../sandbox/pool.ts';
import type { ProbeItem } from '../../schema/probe-item.ts';
import type { LoadedTask } from '../../schema/task.ts';
import { type PasskSettings, passkMaxTokensOf } from './settings.ts';
import type { RungScorer } from './scorer.ts';

/** The items pass@K samples: all of them, or the first rendering of each trajectory (`passkOnePerTrajectory`). */
export function passkItemsOf<T extends { source: { file: string } }>(
  items: readonly T[],
  s: Pick<PasskSettings, 'passkOnePerTrajectory'>,
): T[] {
  if (!s.passkOnePerTrajectory) return [...items];
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(item.source.file) && seen.add(item.source.file));
}

/** pass@K's token limit on one checkpoint: `passkMaxTokens`, or less by `passkGoldMargin` (see there). */
export function passkTokenLimit(
  s: Pick<PasskSettings, 'passkMaxTokens' | 'passkGoldMargin'>,
  items: readonly { gold: string }[],
  backend: Pick<CompletionBackend, 'encode'>,
): number {
  const cap = passkMaxTokensOf(s);
  if (!s.passkGoldMargin || items.length === 0) return cap;
  const longest = Math.max(...items.map((i) => backend.encode(i.gold).length));
  return Math.min(cap, Math.ceil(s.passkGoldMargin * longest));
}

/** The sandboxes pass@K's samples run and are graded in: local (jailed), two per task. */
export function passkSandboxes(): TaskPools {
  return new TaskPools((t) => openSandbox('local', t), 2);
}

/** What one pass@K run over checkpoints shares: its items (those with a task record), the tasks and the sandboxes. */
export interface PasskRun {
  items: ProbeItem[];
  tasks: ReadonlyMap<string, LoadedTask>;
  pools: TaskPools;
}

/** The items of a pass@K run: `passkItemsOf` those whose task has a record. */
export function passkRunItems(items: readonly ProbeItem[], s: PasskSettings, tasks: ReadonlyMap<string, LoadedTask>): ProbeItem[] {
  return passkItemsOf(items, s).filter((i) => tasks.has(i.task));
}

/** pass@K on one open checkpoint. */
export function scorePasskRung(
  checkpoint: string,
  run: PasskRun,
  s: PasskSettings & { seed: number },
  scorer: RungScorer,
): Promise<PasskResult> {
  return scorer<PasskResult, PasskItem>('passk', (backend, hooks) =>
    scorePassk(
      checkpoint,
      backend,
      run.items,
      {
        n: s.n,
        ks: passAtKs(s.n),
        ...SAMPLING,
        maxTokens: passkTokenLimit(s, run.items, backend),
        seed: s.seed,
        taskOf: (item) => taskForItem(run.tasks.get(item.task)!, item),
        leaseFor: run.pools.leaseFor,
        gradersFor: run.pools.gradersFor,
        restore: restoreProbeState,
      },
      hooks,
    ),
  );
}
