/** `probe report`: rankings from finished run directories, and one self-contained HTML file to share. */
import { Command } from 'commander';
import { environmentResults, type ReportData } from '../report/collect.ts';
import { reportRuns } from '../report/report-runs.ts';
import { rankingAccuracy } from '../probes/mcq.ts';
import { formatPercent, formatTable, TABLE_VALUES } from '../report/table.ts';
import { type Column, showValue } from '../asap/environment.ts';
import { ENVIRONMENTS } from '../environments/registry.ts';
import { nonNegativeInteger } from './args.ts';
import { CONTROL_LABEL } from '../report/checkpoint-name.ts';
import { rankedWithTies } from '../stats/ties.ts';

interface ReportFlags {
  html?: string;
  downstream?: string;
  title?: string;
  maxTranscripts: number;
  json?: boolean;
  includeControls?: boolean;
}

export function reportCommand(): Command {
  return new Command('report')
    .description(
      "Rank checkpoints from run directories (any verb's --out) and write a self-contained HTML report: tables, charts, per-item drill-down, ASAP transcripts.",
    )
    .argument('<runs...>', 'run directories')
    .option('--html <file>', 'write the HTML report here')
    .option('--downstream <file.csv>', 'downstream scores (checkpoint,score rows) for the correlation scatter')
    .option('--include-controls', 'correlate controls (config.json probe_ladder.control: checkpoints that have seen the probes) too')
    .option('--title <text>', 'report title', 'probe report')
    .option('--max-transcripts <n>', 'ASAP transcripts included in the HTML (the others are listed by path)', nonNegativeInteger, 200)
    .option('--json', 'print the collected results as one JSON document on stdout')
    .addHelpText('after', '\nExample:\n  probe report runs/demo --html runs/demo/report.html --downstream swebench.csv')
    .action((runs: string[], flags: ReportFlags) => {
      const { data, html } = reportRuns(runs, {
        html: flags.html,
        downstream: flags.downstream,
        title: flags.title,
        maxTranscripts: flags.maxTranscripts,
        includeControls: Boolean(flags.includeControls),
      });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(summary(data, html), null, 2)}\n`);
        return;
      }
      printRankings(data);
      if (html) process.stderr.write(`\nHTML report: ${html}\n`);
    });
}

function summary(data: ReportData, html: string | null) {
  return {
    runs: data.runs.map((r) => ({ dir: r.dir, verb: r.verb })),
    bpb: data.bpb.map((r) => ({ checkpoint: r.checkpoint, bpb: r.bpb })),
    mcq: data.mcq.map((r) => ({ checkpoint: r.checkpoint, acc: r.acc, acc_norm: r.acc_norm, acc_pmi: r.acc_pmi })),
    passk: data.passk.map((r) => ({ checkpoint: r.checkpoint, pass_at: r.pass_at })),
    asap: data.asap.map((r) => ({ checkpoint: r.checkpoint, pass_at: r.pass_at, intersection: r.intersection, behaviour: r.behaviour })),
    // The other environments' episodes by name: their leading columns (Terminal-Bench's profile) by header, and transcripts where linked.
    ...Object.fromEntries(
      ENVIRONMENTS.filter((env) => env.episodes).map((env) => [
        env.name,
        environmentResults(data, env).map((r) => ({
          checkpoint: r.checkpoint,
          ...Object.fromEntries(env.columns.leading.map((c) => [c.header, c.value(r)])),
          pass_at: r.pass_at,
          intersection: r.intersection,
          behaviour: r.behaviour,
          ...(r.transcripts ? { transcripts: r.transcripts } : {}),
        })),
      ]),
    ),
    shortlist: data.ladder?.shortlist ?? null,
    controls: [...new Set(data.runs.flatMap((r) => (r.manifest?.checkpoints ?? []).filter((c) => c.control).map((c) => c.name)))],
    html,
  };
}

/** Results best first with each one's place, a tie sharing it (rankedWithTies). */
function places<T>(results: readonly T[], score: (r: T) => number | undefined, better: 'higher' | 'lower'): Array<[T, string]> {
  return rankedWithTies(results, score, better).map(({ item, rank }) => [item, rank]);
}
const passAt1 = (r: { pass_at: Record<string, number> }) => r.pass_at['1'] ?? 0;

function printRankings(data: ReportData): void {
  const fixed = (v: number | null | undefined, digits: number) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '-');
  const name = (c: string) => (data.controls.has(c) ? `${c} ${CONTROL_LABEL}` : c);
  const out = (title: string, headers: string[], rows: string[][]) =>
    process.stderr.write(`\n${title}\n\n${formatTable(headers, rows, headers.map((_, i) => i).slice(2))}\n`);
  if (data.bpb.length)
    out(
      'Decisive-Action BPB (lower is better)',
      ['rank', 'checkpoint', 'bpb'],
      places(data.bpb, (r) => r.bpb, 'lower').map(([r, rank]) => [rank, name(r.checkpoint), fixed(r.bpb, 4)]),
    );
  if (data.mcq.length)
    out(
      'Patch MCQ',
      ['rank', 'checkpoint', 'acc', 'acc_norm', 'acc_pmi'],
      places(data.mcq, rankingAccuracy, 'higher').map(([r, rank]) => [
        rank,
        name(r.checkpoint),
        formatPercent(r.acc),
        formatPercent(r.acc_norm),
        formatPercent(r.acc_pmi),
      ]),
    );
  if (data.passk.length)
    out(
      'Prefix-conditioned pass@k',
      ['rank', 'checkpoint', 'pass@1', 'pass@n'],
      places(data.passk, passAt1, 'higher').map(([r, rank]) => [
        rank,
        name(r.checkpoint),
        formatPercent(r.pass_at['1']),
        formatPercent(r.pass_at[String(r.n)]),
      ]),
    );
  // Every registered environment's ranking, in its declared columns.
  for (const env of ENVIRONMENTS) {
    const results = environmentResults(data, env);
    if (!results.length) continue;
    const { leading, ranking } = env.columns;
    const show = <R>(c: Column<R>, r: R) => showValue(c.value(r), c.as, TABLE_VALUES);
    out(
      env.section.ranking,
      ['rank', 'checkpoint', ...leading.map((c) => c.header), 'pass@1', '∩@n', ...ranking.map((c) => c.header)],
      places(results, passAt1, 'higher').map(([r, rank]) => [
        rank,
        name(r.checkpoint),
        ...leading.map((c) => show(c, r)),
        formatPercent(r.pass_at['1']),
        formatPercent(r.intersection),
        ...ranking.map((c) => show(c, r)),
      ]),
    );
  }
  if (data.ladder) process.stderr.write(`\nShortlist: ${data.ladder.shortlist.join(', ') || 'none'}\n`);
}
