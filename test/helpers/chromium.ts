/** Headless Chromium (Debian's `chromium`) for rendering reports the way a reader's browser does. */
import { spawnSync } from 'node:child_process';

export function chromiumBinary(): string | null {
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    if (spawnSync('which', [name], { encoding: 'utf8' }).status === 0) return name;
  }
  return null;
}

/** Skips only where no Chromium is installed and CI did not ask for it (PROBE_REQUIRE_CHROMIUM). */
export function chromiumUnavailable(): boolean {
  if (chromiumBinary()) return false;
  if (process.env.PROBE_REQUIRE_CHROMIUM) throw new Error('PROBE_REQUIRE_CHROMIUM is set but no chromium is installed');
  return true;
}

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions'];

/** The DOM after Chromium has loaded and laid out the page. */
export function renderedDom(file: string): string {
  const run = spawnSync(chromiumBinary()!, [...FLAGS, '--dump-dom', `file://${file}`], {
    encoding: 'utf8',
    timeout: 120_000,
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`chromium exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

/** A PNG screenshot of the page. */
export function screenshot(file: string, png: string): void {
  const run = spawnSync(chromiumBinary()!, [...FLAGS, `--screenshot=${png}`, '--window-size=1280,4000', `file://${file}`], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (run.status !== 0) throw new Error(`chromium exited ${run.status}: ${run.stderr}`);
}
