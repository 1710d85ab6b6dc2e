/**
 * `probe report`'s work: finished run directories collected and, where asked, the one
 * self-contained HTML file written. The file's path is checked before any run is read, so a
 * path that cannot take it costs nothing.
 */
import { resolve } from 'node:path';
import { checkOutputFile } from '../store/output-path.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { collectRuns, type ReportData } from './collect.ts';
import { readScores } from './downstream-scores.ts';
import { renderReport } from './html.ts';

export interface ReportSettings {
  /** Where the HTML report goes (`--html`); none is written without it. */
  html?: string | undefined;
  /** Downstream scores for the correlation scatter (`--downstream`, a `checkpoint,score` CSV). */
  downstream?: string | undefined;
  title?: string | undefined;
  maxTranscripts: number;
  includeControls: boolean;
}

/** The collected runs, and the absolute path of the HTML report written (null without `html`). */
export function reportRuns(runs: readonly string[], settings: ReportSettings): { data: ReportData; html: string | null } {
  if (settings.html) checkOutputFile(settings.html, '--html');
  const data = collectRuns([...runs]);
  const downstream = settings.downstream ? readScores(settings.downstream) : undefined;
  if (!settings.html) return { data, html: null };
  const html = resolve(settings.html);
  writeFileAtomic(
    html,
    renderReport(data, {
      title: settings.title,
      maxTranscripts: settings.maxTranscripts,
      includeControls: settings.includeControls,
      ...(downstream ? { downstream } : {}),
    }),
  );
  return { data, html };
}
