/** The served model's one queue: jobs in arrival order, scoring jobs that wait together run as one batched forward pass. */
import type { OnnxBackend } from '../backends/onnx/backend.ts';
import type { ScoreResult } from '../backends/types.ts';

/**
 * The model runs one job at a time, in arrival order. Scoring jobs (echo, one greedy
 * token) that are waiting together run as one batched forward pass: while the model is
 * busy, requests pile up, and the next turn takes every waiting scoring job at once.
 */
export class ModelWorker {
  private readonly waiting: Array<
    | { kind: 'score'; ids: number[]; done: (r: ScoreResult) => void; fail: (e: unknown) => void }
    | { kind: 'other'; job: () => Promise<void> }
  > = [];
  private busy = false;
  /** What /health reports: batching, the tokens drawn in all, and requests whose client went away before the answer (their rows stopped). */
  readonly stats = { batches: 0, batched_requests: 0, largest_batch: 0, drawn_tokens: 0, cancelled_requests: 0 };

  constructor(
    private readonly backend: OnnxBackend,
    private readonly maxBatch: number,
    private readonly windowMs: number,
  ) {}

  score(ids: number[]): Promise<ScoreResult> {
    return new Promise((done, fail) => {
      this.waiting.push({ kind: 'score', ids, done, fail });
      this.kick();
    });
  }

  run<T>(job: () => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ kind: 'other', job: () => job().then(resolve, reject) });
      this.kick();
    });
  }

  private kick(): void {
    if (this.busy) return;
    this.busy = true;
    // A short window lets requests that arrive together share a batch.
    setTimeout(() => void this.drain(), this.windowMs);
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const first = this.waiting[0]!;
      if (first.kind === 'other') {
        this.waiting.shift();
        await first.job();
        continue;
      }
      // Rows are padded to the longest: only prompts of similar length (within 25%) share a batch.
      const batch = [];
      const lead = first.ids.length;
      for (let i = 0; i < this.waiting.length && batch.length < this.maxBatch; ) {
        const job = this.waiting[i]!;
        if (job.kind === 'score' && job.ids.length <= lead * 1.25 && job.ids.length * 1.25 >= lead)
          batch.push(...(this.waiting.splice(i, 1) as Array<Extract<typeof job, { kind: 'score' }>>));
        else i++;
      }
      this.stats.batches++;
      this.stats.batched_requests += batch.length;
      this.stats.largest_batch = Math.max(this.stats.largest_batch, batch.length);
      try {
        const results = await this.backend.promptLogprobsBatch(batch.map((j) => j.ids));
        batch.forEach((j, k) => j.done(results[k]!));
      } catch (error) {
        batch.forEach((j) => j.fail(error));
      }
    }
    this.busy = false;
  }
}
