/** A progress bar on stderr for long commands; silent when asked to be or when stderr is not a terminal. */
import cliProgress from 'cli-progress';

export interface Progress {
  tick(label?: string): void;
  stop(): void;
}

export function createProgress(total: number, enabled: boolean): Progress {
  if (!enabled || !process.stderr.isTTY) return { tick: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({
    stream: process.stderr,
    format: '{bar} {value}/{total} | ETA {eta_formatted} | {label}',
    hideCursor: true,
    clearOnComplete: true,
  }, cliProgress.Presets.shades_classic);
  bar.start(total, 0, { label: '' });
  return {
    tick: (label = '') => bar.increment(1, { label }),
    stop: () => bar.stop(),
  };
}
