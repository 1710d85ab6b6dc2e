/**
 * One progress display for a whole run of several stages (`probe demo`: build, BPB + MCQ,
 * pass@K, ASAP). Each stage still draws its own bar (progress.ts), but while a run is being
 * tracked the bar says which stage of how many it is and gives the ETA of the whole run, not of
 * the stage: a user waiting on the demo wants to know when it ends, and "100%" four times says
 * nothing.
 *
 * The run's ETA weighs each stage by its expected share of the run's time (measured on the
 * demo: docs/benchmarks.md), corrected by the pace actually measured so far: fraction f of the
 * weighted work done in elapsed time t leaves t·(1 − f)/f. Work read back from a resumed run or
 * the cache counts as done but not into the pace, as in a single bar.
 *
 * The tracker travels with the async context (AsyncLocalStorage), so the stages' own code only
 * says which stage it is (`enterStage`) and needs no tracker passed down to it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export interface StageShare {
  readonly name: string;
  /** Expected share of the run's time (any scale: shares are normalised). */
  readonly share: number;
}

export interface RunPosition {
  /** `stage 3/4 pass@k` */
  readonly stage: string;
  /** Fraction of the whole run done, 0–1. */
  readonly fraction: number;
  /** Milliseconds the run has left (NaN until some work has been computed), and since it started. */
  readonly etaMs: number;
  readonly elapsedMs: number;
}

export class RunStages {
  private readonly stages: StageShare[];
  private total: number;
  private readonly started: number;
  private current = -1;
  /** Shares of the stages before the current one: all of them done, and the part of that read back rather than computed. */
  private doneShare = 0;
  private reusedShare = 0;
  /** When each stage entered was entered (ms), by its index. */
  private readonly enteredAt = new Map<number, number>();
  /** The part of the current stage read back, as its bar last said. */
  private stageReused = 0;

  constructor(
    stages: readonly StageShare[],
    private readonly now: () => number = Date.now,
  ) {
    this.stages = [...stages];
    this.total = stages.reduce((sum, s) => sum + s.share, 0);
    this.started = now();
  }

  /**
   * The run is now in stage `name`; the stage it was in is finished. Stages between that never
   * ran (a resumed run's finished ones) count as done and read back; a stage not in the plan
   * joins it with the mean share.
   */
  enter(name: string): void {
    if (this.current >= 0 && this.stages[this.current]!.name === name) return; // already in it (a caller and the stage both say so)
    let index = this.stages.findIndex((s, i) => i > this.current && s.name === name);
    if (index === -1) {
      index = this.current + 1;
      this.stages.splice(index, 0, { name, share: this.total / Math.max(1, this.stages.length) });
      this.total += this.stages[index]!.share;
    }
    if (this.current >= 0) {
      const share = this.stages[this.current]!.share;
      this.doneShare += share;
      this.reusedShare += share * this.stageReused;
    }
    for (let i = this.current + 1; i < index; i++) {
      this.doneShare += this.stages[i]!.share;
      this.reusedShare += this.stages[i]!.share;
    }
    this.current = index;
    this.stageReused = 0;
    this.enteredAt.set(index, this.now());
  }

  /** Seconds each stage that ran took (the current one until now), in order: where a run's time went. */
  timings(): Array<{ stage: string; seconds: number }> {
    const entered = [...this.enteredAt].sort(([a], [b]) => a - b);
    return entered.map(([index, at], i) => ({
      stage: this.stages[index]!.name,
      seconds: Math.round(((entered[i + 1]?.[1] ?? this.now()) - at) / 100) / 10,
    }));
  }

  /** Where the run stands, given the current stage's own fraction done and the part of it read back. */
  position(stageFraction: number, stageReusedFraction: number): RunPosition {
    this.stageReused = stageReusedFraction;
    const elapsedMs = this.now() - this.started;
    const stage = this.stages[this.current];
    const share = stage ? stage.share : 0;
    const fraction = Math.min(1, (this.doneShare + share * stageFraction) / this.total);
    const computed = fraction - (this.reusedShare + share * stageReusedFraction) / this.total;
    const etaMs = fraction >= 1 ? 0 : computed <= 0 ? Number.NaN : (elapsedMs * (1 - fraction)) / computed;
    return {
      stage: stage ? `stage ${this.current + 1}/${this.stages.length} ${stage.name}` : '',
      fraction,
      etaMs,
      elapsedMs,
    };
  }
}

const tracked = new AsyncLocalStorage<RunStages>();

/** Runs `fn` as one tracked run of these stages: every bar drawn inside it shows the run's stage and ETA. */
export function withRunStages<T>(stages: readonly StageShare[], fn: () => Promise<T>, now?: () => number): Promise<T> {
  return tracked.run(new RunStages(stages, now), fn);
}

/** The tracked run this code runs in, if any. */
export function currentRun(): RunStages | undefined {
  return tracked.getStore();
}

/** Says that the tracked run (if any) is now in stage `name`. */
export function enterStage(name: string): void {
  tracked.getStore()?.enter(name);
}
