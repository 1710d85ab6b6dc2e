/**
 * Progress on stderr for long commands: an overall bar with its ETA, and a line of
 * per-checkpoint counts. Silent when asked to be (`--json`) or when the stream is not a
 * terminal. Items answered from a resumed run's log or the cache count as done but not
 * into the rate, so the ETA is that of the work left.
 */
import { currentRun } from './run-stages.ts';
import { shortCheckpointName } from './table.ts';

export interface Progress {
  /** One unit of `checkpoint` finished; `reused` when it was read back rather than computed. */
  tick(checkpoint?: string, reused?: boolean): void;
  /** What the bar is doing now (a phase, a checkpoint). */
  label(text: string): void;
  stop(): void;
}

export interface ProgressOptions {
  total: number;
  /** Checkpoints and the units each has, for the per-checkpoint counts. */
  perCheckpoint?: Array<{ name: string; units: number }>;
  enabled: boolean;
  stream?: NodeJS.WriteStream | (NodeJS.WritableStream & { isTTY?: boolean; columns?: number });
  /** Milliseconds between redraws. */
  intervalMs?: number;
  now?: () => number;
}

const SILENT: Progress = { tick: () => {}, label: () => {}, stop: () => {} };

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '--';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  if (!options.enabled || !stream.isTTY || options.total <= 0) return SILENT;
  const now = options.now ?? Date.now;
  const started = now();
  const counts = new Map((options.perCheckpoint ?? []).map((c) => [c.name, { done: 0, units: c.units }]));
  let done = 0;
  let computed = 0;
  let label = '';
  let drawnLines = 0;
  let lastDraw = 0;

  const lines = (): string[] => {
    const width = Math.max(40, stream.columns || 80);
    const fraction = Math.min(1, done / options.total);
    const elapsed = now() - started;
    // Rate from computed units only: resumed or cached ones took no time.
    const eta = done >= options.total ? 0 : computed === 0 ? NaN : ((options.total - done) * elapsed) / computed;
    const barWidth = 16;
    const filled = Math.round(fraction * barWidth);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}`;
    // Inside a tracked run (run-stages.ts) the bar is one stage of it: the stage, and the whole run's share done and ETA.
    const run = currentRun()?.position(fraction, (done - computed) / options.total);
    const head = run
      ? `${run.stage} ${bar} ${done}/${options.total} | run ${(100 * run.fraction).toFixed(0)}% ETA ${formatDuration(run.etaMs)} | ${formatDuration(run.elapsedMs)} elapsed`
      : `${bar} ${done}/${options.total} ${(100 * fraction).toFixed(0).padStart(3)}% | ETA ${formatDuration(eta)} | ${formatDuration(elapsed)} elapsed`;
    const out = [`${head}${label ? ` | ${label}` : ''}`.slice(0, width - 1)];
    if (counts.size > 0) {
      const parts = [...counts].map(([name, c]) => `${shortCheckpointName(name)} ${c.done}/${c.units}${c.done >= c.units ? ' ✓' : ''}`);
      // As many lines as the counts need at this width.
      let line = ' ';
      for (const part of parts) {
        if (line.length > 1 && line.length + part.length + 3 > width - 1) {
          out.push(line.slice(0, width - 1)); // a line wider than the terminal would wrap and throw the redraw off
          line = ' ';
        }
        line += `${line.length > 1 ? ' ·' : ''} ${part}`;
      }
      out.push(line.slice(0, width - 1));
    }
    return out;
  };

  const draw = (force = false) => {
    const t = now();
    if (!force && t - lastDraw < (options.intervalMs ?? 100)) return;
    lastDraw = t;
    // Back to the first line drawn last time, then rewrite every line.
    let text = drawnLines > 1 ? `\x1b[${drawnLines - 1}A\r` : '\r';
    const current = lines();
    // Never fewer lines than last time (the counts can wrap differently): a shorter draw would leave a stale line below.
    while (current.length < drawnLines) current.push('');
    text += current.map((l) => `\x1b[2K${l}`).join('\n');
    drawnLines = current.length;
    stream.write(text);
  };

  draw(true);
  return {
    tick(checkpoint, reused = false) {
      done++;
      if (!reused) computed++;
      const c = checkpoint === undefined ? undefined : counts.get(checkpoint);
      if (c) c.done++;
      draw(done >= options.total);
    },
    label(text) {
      label = text;
      draw();
    },
    stop() {
      // Erase what was drawn: the tables that follow start on a clean line.
      let text = drawnLines > 1 ? `\x1b[${drawnLines - 1}A\r` : '\r';
      text += Array.from({ length: drawnLines }, () => '\x1b[2K').join('\n');
      text += drawnLines > 1 ? `\x1b[${drawnLines - 1}A\r` : '\r';
      stream.write(text);
      drawnLines = 0;
    },
  };
}
