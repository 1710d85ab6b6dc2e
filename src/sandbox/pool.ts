/**
 * Leases sandboxes for one task: at most `size` exist at once, created on demand and
 * reused. Whoever leases one restores it to the state it needs first, so a reused
 * sandbox is as good as a fresh one for the repository — and a container is not paid
 * for per verification.
 *
 * A pool keeps two sets apart. Candidates (a model's actions, a replayed trajectory's
 * steps) run in the agents' sandboxes (`lease`); a state is graded only in a graders'
 * sandbox (`graders`), where nothing but the harness and the task's tests ever runs. What
 * a candidate's commands left outside its tree — a process, a file wherever the image let
 * it write — is in a sandbox the tests never run in. The two lease types differ, so a
 * verifier cannot be handed an agent's sandbox.
 */
import type { LoadedTask } from '../schema/task.ts';
import type { Sandbox } from './types.ts';

export type SandboxFactory = (task: LoadedTask) => Promise<Sandbox>;
/** Runs `fn` with a sandbox of the task's, returning it afterwards. */
export type SandboxLease = <T>(fn: (sb: Sandbox) => Promise<T>) => Promise<T>;

const GRADERS = Symbol('graders');
/** A lease of sandboxes no candidate command has run in: the only kind the verifier takes. */
export type GraderLease = SandboxLease & { readonly [GRADERS]: true };

function asGraders(lease: SandboxLease): GraderLease {
  return Object.assign(lease, { [GRADERS]: true as const });
}

/** At most `size` sandboxes of one task, reused: the pool of one role. */
class Leases {
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

export class SandboxPool {
  private readonly agents: Leases;
  private readonly grading: Leases;

  constructor(factory: SandboxFactory, task: LoadedTask, size: number) {
    this.agents = new Leases(factory, task, size);
    this.grading = new Leases(factory, task, size);
    this.graders = asGraders(this.grading.lease);
  }

  /** A sandbox for a candidate's commands. */
  readonly lease: SandboxLease = (fn) => this.agents.lease(fn);
  /** A sandbox for grading a state: no candidate command runs in these. */
  readonly graders: GraderLease;

  async close(): Promise<void> {
    await Promise.all([this.agents.close(), this.grading.close()]);
  }
}

/**
 * A lease that opens a fresh sandbox for each use and closes it afterwards. No sandbox
 * outlives its one use, so the lease serves candidates and graders alike.
 */
export function freshSandboxes(factory: SandboxFactory, task: LoadedTask): GraderLease {
  return asGraders(async (fn) => {
    const sb = await factory(task);
    try {
      return await fn(sb);
    } finally {
      await sb.close();
    }
  });
}

/** One pool per task, created on first use: for verbs that visit many tasks' sandboxes. */
export class TaskPools {
  private readonly pools = new Map<string, SandboxPool>();

  constructor(
    private readonly factory: SandboxFactory,
    private readonly size: number,
  ) {}

  private poolFor(task: LoadedTask): SandboxPool {
    // Items of one task built from trajectories that ran in different directories need sandboxes of their own.
    const key = `${task.instance_id}\0${task.workdir}`;
    let pool = this.pools.get(key);
    if (!pool) {
      pool = new SandboxPool(this.factory, task, this.size);
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** Sandboxes for the task's candidates. */
  readonly leaseFor = (task: LoadedTask): SandboxLease => this.poolFor(task).lease;
  /** Sandboxes that grade the task's states. */
  readonly gradersFor = (task: LoadedTask): GraderLease => this.poolFor(task).graders;

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}
