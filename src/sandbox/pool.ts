/**
 * Leases sandboxes for one task: at most `size` exist at once, created on demand and
 * reused. Whoever leases one restores it to the state it needs first, so a reused
 * sandbox is as good as a fresh one for the repository — and a container is not paid
 * for per verification.
 */
import type { LoadedTask } from '../schema/task.ts';
import type { Sandbox } from './types.ts';

export type SandboxFactory = (task: LoadedTask) => Promise<Sandbox>;
/** Runs `fn` with a sandbox of the task's, returning it afterwards. */
export type SandboxLease = <T>(fn: (sb: Sandbox) => Promise<T>) => Promise<T>;

export class SandboxPool {
  private readonly idle: Sandbox[] = [];
  private readonly all: Sandbox[] = [];
  private readonly waiting: Array<(sb: Sandbox) => void> = [];
  private creating = 0;

  constructor(
    private readonly factory: SandboxFactory,
    private readonly task: LoadedTask,
    private readonly size: number,
  ) {}

  private async acquire(): Promise<Sandbox> {
    const ready = this.idle.pop();
    if (ready) return ready;
    if (this.all.length + this.creating < this.size) {
      this.creating++;
      try {
        const sb = await this.factory(this.task);
        this.all.push(sb);
        return sb;
      } finally {
        this.creating--;
      }
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private release(sb: Sandbox): void {
    const next = this.waiting.shift();
    if (next) next(sb);
    else this.idle.push(sb);
  }

  readonly lease: SandboxLease = async (fn) => {
    const sb = await this.acquire();
    try {
      return await fn(sb);
    } finally {
      this.release(sb);
    }
  };

  async close(): Promise<void> {
    await Promise.all(this.all.map((sb) => sb.close()));
    this.all.length = 0;
    this.idle.length = 0;
  }
}

/** A lease that opens a fresh sandbox for each use and closes it afterwards. */
export function freshSandboxes(factory: SandboxFactory, task: LoadedTask): SandboxLease {
  return async (fn) => {
    const sb = await factory(task);
    try {
      return await fn(sb);
    } finally {
      await sb.close();
    }
  };
}

/** One pool per task, created on first use: for verbs that visit many tasks' sandboxes. */
export class TaskPools {
  private readonly pools = new Map<string, SandboxPool>();

  constructor(
    private readonly factory: SandboxFactory,
    private readonly size: number,
  ) {}

  readonly leaseFor = (task: LoadedTask): SandboxLease => {
    // Items of one task built from trajectories that ran in different directories need sandboxes of their own.
    const key = `${task.instance_id}\0${task.workdir}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new SandboxPool(this.factory, task, this.size);
      this.pools.set(key, pool);
    }
    return pool.lease;
  };

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}
