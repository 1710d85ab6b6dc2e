/**
 * The watch's own record, `watch.jsonl` in its run directory: one line when a checkpoint's
 * cheap rungs are done (with the decision on the expensive ones), one when it is fully
 * scored, one when it failed. What a rerun reads to know what is done — a scored
 * checkpoint is never opened again — and what the trend and results.json are made from.
 * (Items inside a rung are in the rung's samples.jsonl, as in every run directory.)
 */
import { join } from 'node:path';
import type { AsapResult } from '../swe/run.ts';
import type { BpbResult } from '../probes/bpb.ts';
import type { McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import type { WatchedScores } from '../report/trend.ts';
import { JsonlLog } from '../store/jsonl-log.ts';
import type { HeavyDecision } from './plan.ts';

interface Where {
  /** As tables name it (the `--ckpt` argument it stands for). */
  checkpoint: string;
  /** Its key in the run directory: absolute path or server URL. */
  key: string;
  /** Its entry in the watched directory. */
  entry: string;
  at: string;
}

export interface CheapEvent extends Where {
  event: 'cheap';
  step: number;
  step_source: string;
  series: string;
  code_bpb: BpbResult | null;
  bpb: BpbResult | null;
  mcq: McqResult | null;
  /** Why the cheap rungs did not run (a checkpoint whose engine returns no prompt log-probs). */
  cheap_skipped?: string;
  heavy: HeavyDecision;
}

export interface ScoredEvent extends Where {
  event: 'scored';
  passk: PasskResult | null;
  asap: AsapResult | null;
}

export interface FailedEvent extends Where {
  event: 'failed';
  /** The entry's files when it failed: it is tried again once they change, or when the watch restarts. */
  fingerprint: string;
  stage: 'open' | 'cheap' | 'pass@k' | 'asap';
  message: string;
  exit_code: number;
}

export type WatchEvent = CheapEvent | ScoredEvent | FailedEvent;

export interface CheckpointState {
  cheap?: CheapEvent;
  scored?: ScoredEvent;
  failed?: FailedEvent;
}

export class WatchLog {
  private readonly log: JsonlLog<WatchEvent>;
  private readonly byKey = new Map<string, CheckpointState>();
  /** Keys in the order their cheap rungs finished: the order decisions were made in. */
  private readonly order: string[] = [];

  constructor(dir: string) {
    this.log = new JsonlLog<WatchEvent>(WatchLog.file(dir), dir);
    for (const e of this.log.read()) this.note(e);
  }

  static file(dir: string): string {
    return join(dir, 'watch.jsonl');
  }

  private note(e: WatchEvent): void {
    const state = this.byKey.get(e.key) ?? {};
    if (e.event === 'cheap' && !state.cheap) this.order.push(e.key);
    this.byKey.set(e.key, { ...state, [e.event]: e });
  }

  append(e: WatchEvent): void {
    this.log.append(e);
    this.note(e);
  }

  state(key: string): CheckpointState {
    return this.byKey.get(key) ?? {};
  }

  /** The cheap records of one training run, in the order they were decided. */
  decidedIn(series: string): CheapEvent[] {
    return this.order.map((k) => this.byKey.get(k)!.cheap!).filter((c) => c.series === series);
  }

  /** Every checkpoint with cheap scores, with whatever expensive rungs it has finished. */
  scores(): WatchedScores[] {
    return this.order.map((k) => {
      const { cheap, scored } = this.byKey.get(k)!;
      return {
        checkpoint: cheap!.checkpoint,
        label: cheap!.entry.split('/').at(-1)!,
        series: cheap!.series,
        step: cheap!.step,
        code_bpb: cheap!.code_bpb,
        bpb: cheap!.bpb,
        mcq: cheap!.mcq,
        passk: scored?.passk ?? null,
        asap: scored?.asap ?? null,
      };
    });
  }

  /** When each checkpoint's cheap rungs finished, by checkpoint: the time its points carry (TensorBoard's wall time), the same on every rewrite. */
  cheapTimes(): Map<string, string> {
    return new Map(this.order.map((k) => [this.byKey.get(k)!.cheap!.checkpoint, this.byKey.get(k)!.cheap!.at]));
  }

  /** Checkpoints with cheap scores whose pass@K and ASAP are still to come: not scored, and not failed since. */
  heavyPending(): Set<string> {
    const failed = new Set(this.failures().map((f) => f.checkpoint));
    return new Set(
      [...this.byKey.values()].flatMap((s) => (s.cheap && !s.scored && !failed.has(s.cheap.checkpoint) ? [s.cheap.checkpoint] : [])),
    );
  }

  /** Checkpoints fully scored, and those with cheap scores only so far (a watch stopped part-way through them). */
  counts(): { scored: number; partly: number } {
    const states = [...this.byKey.values()];
    return { scored: states.filter((s) => s.scored).length, partly: states.filter((s) => s.cheap && !s.scored).length };
  }

  /** Checkpoints whose last word is a failure (none after it scored them). */
  failures(): FailedEvent[] {
    return [...this.byKey.values()].filter((s) => s.failed && !s.scored).map((s) => s.failed!);
  }
}
