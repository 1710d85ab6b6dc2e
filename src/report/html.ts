/**
 * The shareable report: one HTML file with its styles and charts inline, readable offline.
 * Sections (each with a stable id): runs, ranking, bpb, mcq, passk, asap, correlation,
 * items (drill-down per probe item) and transcripts (ASAP episodes).
 */
import { formatTrendValue, TREND_PROBES, type TrendPoint, type TrendProbe } from './trend.ts';
import { trendChart } from './trend-svg.ts';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AsapResult } from '../swe/run.ts';
import { type Column, type EnvironmentDeclaration, type EnvironmentResult, showValue, type ValueFormat } from '../asap/environment.ts';
import { ENVIRONMENTS } from '../environments/registry.ts';
import type { BpbResult } from '../probes/bpb.ts';
import { RANKING_ACCURACY_LABEL, rankingAccuracy } from '../probes/mcq.ts';
import { spearman } from '../stats/correlation.ts';
import { rankedWithTies, tiedChain, tiedGroups } from '../stats/ties.ts';
import { type EnvironmentReport, environmentResults, ladderMcqAccuracy, type ReportData } from './collect.ts';
import type { EnvironmentEpisodes } from '../asap/episode-plan.ts';
import { downstreamScore, formatPercent, shortCheckpointName } from './table.ts';
import { CONTROL_LABEL } from './checkpoint-name.ts';
import { MCQ_MIN_DISTRACTORS } from '../schema/probe-item.ts';
import { knownOrder } from './known-order.ts';
import { barChart, escapeXml as esc, lineChart, scatter, stackedBars } from './svg.ts';
import { InputError } from '../errors.ts';
import { MAX_STRING_BYTES, readTextFile } from '../util/safe-tree.ts';

export const REPORT_SECTIONS = ['runs', 'ranking', 'bpb', 'mcq', 'passk', 'asap', 'correlation', 'items', 'transcripts'] as const;

export interface ReportOptions {
  title?: string;
  /** Downstream scores by checkpoint name (or its directory's base name). */
  downstream?: Map<string, number>;
  /** Longest transcript shown whole; longer ones keep their end. */
  maxTranscriptChars?: number;
  /** Transcripts included in the file; the others are listed with their paths (a large ASAP run has thousands). */
  maxTranscripts?: number;
  generatedAt?: Date;
  /** Correlate controls (checkpoints that have seen the probes) too; left out by default. */
  includeControls?: boolean;
}

const pct = (v: number | null | undefined) => formatPercent(v, '–');
const short = shortCheckpointName;
const num = (v: number | null | undefined, digits = 4) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '–');

/** Markup a table cell holds as it is; every other cell is text and escaped. */
class Raw {
  constructor(readonly html: string) {}
}
const raw = (html: string) => new Raw(html);

type Cell = string | number | null | undefined | Raw;

function table(headers: string[], rows: Cell[][], numeric: number[] = []): string {
  const cell = (tag: string, value: Cell, i: number) =>
    `<${tag}${numeric.includes(i) ? ' class="num"' : ''}>${value instanceof Raw ? value.html : esc(value === null || value === undefined ? '–' : String(value))}</${tag}>`;
  return `<table><thead><tr>${headers.map((h, i) => cell('th', h, i)).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((v, i) => cell('td', v, i)).join('')}</tr>`).join('')}</tbody></table>`;
}

function section(id: string, title: string, body: string): string {
  return `<section id="${id}"><h2>${esc(title)}</h2>${body}</section>`;
}

const empty = (what: string) => `<p class="empty">${esc(what)}</p>`;

function runsSection(data: ReportData): string {
  const rows = data.runs.map((r) => {
    const m = r.manifest;
    const code = (text: string) => `<code>${esc(text)}</code>`;
    // How --bos resolved for each checkpoint (run.json, once it was opened): the BOS id put first, or none.
    const bos = (c: NonNullable<NonNullable<typeof m>['checkpoints']>[number]) =>
      c.bos
        ? ` BOS ${code(c.bos.used ? String(c.bos.bos_id) : 'none')} <span title="${esc(c.bos.source)}">(${esc(c.bos.policy)})</span>`
        : '';
    // The graph a directory ran at (--dtype) is part of what was measured: fp16 and q4 of one directory score differently.
    const dtype = typeof m?.config?.dtype === 'string' ? m.config.dtype : undefined;
    const ckpts = (m?.checkpoints ?? [])
      .map(
        (c) =>
          `${esc(short(c.name))} ${code(c.content_hash ? String(c.content_hash).slice(0, 12) : 'server')}${c.content_hash && dtype ? ` ${esc(dtype)}` : ''}${bos(c)}`,
      )
      .join('<br>');
    return [
      raw(code(r.dir)),
      r.verb,
      m?.probe_version,
      m?.git?.commit ? raw(`${code(String(m.git.commit).slice(0, 12))}${m.git.dirty ? ' (modified)' : ''}`) : null,
      m?.created,
      m?.probe_set ? raw(`${esc(String(m.probe_set.items))} items ${code(String(m.probe_set.sha256).slice(0, 12))}`) : null,
      ckpts ? raw(ckpts) : null,
      m ? raw(code(JSON.stringify(m.seeds))) : null,
    ];
  });
  return section(
    'runs',
    'Runs',
    table(['run directory', 'verb', 'probe', 'git', 'started', 'probe set', 'checkpoints (content hash, dtype, BOS)', 'seeds'], rows),
  );
}

function rankingSection(data: ReportData): string {
  let body = '';
  if (data.ladder) {
    body += `<p>Shortlist for post-training: <strong>${data.ladder.shortlist.map((c) => esc(short(c))).join(', ') || 'none'}</strong></p>`;
    const known = data.ladder.rows.some((r) => typeof r.heldout_code_bpb === 'number');
    body += table(
      [
        'checkpoint',
        ...(known ? ['held-out BPB'] : []),
        'BPB',
        `MCQ ${RANKING_ACCURACY_LABEL}`,
        'cheap rank',
        'pass@1',
        'ASAP pass@1',
        'ASAP parsable',
        'ASAP edits',
        'shortlist',
      ],
      data.ladder.rows.map((r) => [
        named(data, r.checkpoint),
        ...(known ? [num(r.heldout_code_bpb, 3)] : []),
        num(r.bpb),
        pct(ladderMcqAccuracy(r)),
        num(r.cheap_rank, 1),
        pct(r.pass_at?.['1']),
        pct(r.asap?.pass_at_1),
        pct(r.asap?.parsable_turns),
        pct(r.asap?.autonomous_edits),
        r.shortlisted ? '✔' : '',
      ]),
      Array.from({ length: known ? 8 : 7 }, (_, i) => i + 1),
    );
    body += knownOrderBlock(data);
  }
  // Each probe's order, ties as ties: four checkpoints all at pass@1 0% are one group, not an order.
  const chainOf = <T extends { checkpoint: string }>(
    results: readonly T[],
    score: (r: T) => number | undefined,
    better: 'higher' | 'lower',
  ) => esc(tiedChain(tiedGroups(results, score, better).map((group) => group.map((r) => short(r.checkpoint)))));
  const passAt1 = (r: { pass_at: Record<string, number> }) => r.pass_at['1'] ?? 0;
  const ranked: string[] = [];
  if (data.bpb.length) ranked.push(`<li>BPB (lower is better): ${chainOf(data.bpb, (r) => r.bpb, 'lower')}</li>`);
  if (data.mcq.length) ranked.push(`<li>MCQ ${RANKING_ACCURACY_LABEL}: ${chainOf(data.mcq, rankingAccuracy, 'higher')}</li>`);
  if (data.passk.length) ranked.push(`<li>pass@1: ${chainOf(data.passk, passAt1, 'higher')}</li>`);
  if (data.asap.length) ranked.push(`<li>ASAP pass@1: ${chainOf(data.asap, passAt1, 'higher')}</li>`);
  body += ranked.length ? `<h3>Ranking per probe</h3><ol class="plain">${ranked.join('')}</ol>` : '';
  return section('ranking', 'Ranking', body || empty('No results in these runs.'));
}

/** Each probe against training step (watch runs): the chart, then every point with its interval, then where probes and baseline disagree. */
function trendSection(data: ReportData): string {
  if (!data.trend.length) return '';
  const points = data.trend;
  const probes = TREND_PROBES.filter((p) => points.some((x) => x.values[p.key]));
  const cell = (point: TrendPoint, probe: TrendProbe): Cell => {
    const v = point.values[probe];
    if (!v) return '';
    const interval = v.low !== null && v.high !== null ? ` [${formatTrendValue(probe, v.low)}, ${formatTrendValue(probe, v.high)}]` : '';
    const text = `${formatTrendValue(probe, v.value)}${interval}`;
    return point.disagreements[probe]
      ? raw(`<span class="disagrees" title="${esc(point.disagreements[probe]!)}">${esc(text)} ⚑</span>`)
      : text;
  };
  const disagreements = points.flatMap((p) =>
    Object.entries(p.disagreements).map(
      ([probe, why]) => `<li>${esc(p.label)}, ${esc(TREND_PROBES.find((x) => x.key === probe)!.label)}: ${esc(why)}</li>`,
    ),
  );
  return section(
    'trend',
    'Trend: each probe against training step',
    `<p class="meta">One point per checkpoint per probe: the cheap rungs on every checkpoint, pass@K and ASAP where the watch ran them. The same chart is <code>trend.svg</code> in the watch's run directory.</p>` +
      trendChart('Agentic potential against training step', points) +
      table(
        ['checkpoint', 'training run', 'step', ...probes.map((p) => p.label)],
        points.map((p) => [p.label, p.series, p.step, ...probes.map((probe) => cell(p, probe.key))]),
        [2, ...probes.map((_, i) => i + 3)],
      ) +
      (disagreements.length
        ? `<h3>Where a probe and the baseline disagree (⚑)</h3><ul>${disagreements.join('')}</ul>`
        : '<p>No probe disagrees with the baseline here.</p>'),
  );
}

/** A checkpoint's name in a table, marked when it is a control. */
function named(data: ReportData, checkpoint: string): Cell {
  return data.controls.has(checkpoint) ? raw(`${esc(checkpoint)} <span class="control">${esc(CONTROL_LABEL)}</span>`) : checkpoint;
}

/** Each probe's order of the checkpoints whose quality is known, beside that order. */
function knownOrderBlock(data: ReportData): string {
  const order = data.ladder ? knownOrder(data.ladder.rows) : undefined;
  if (!order) return '';
  const chain = (groups: string[][]) => groups.map((g) => g.map((c) => esc(short(c))).join(' = ')).join(' › ');
  return (
    `<h3>Against the known order</h3><p>Held-out code BPB measured when these checkpoints were trained, best first: <strong>${chain(order.known.map((k) => [k.checkpoint]))}</strong>` +
    ` (${order.known.map((k) => `${esc(short(k.checkpoint))} ${k.heldout_code_bpb.toFixed(3)}`).join(', ')}).</p>` +
    table(
      ['probe', 'its order', 'Kendall τ', 'agrees'],
      order.checks.map((c) => [
        c.metric,
        raw(chain(c.order)),
        num(c.kendall, 2),
        c.verdict === 'agrees' ? '✔ agrees' : c.verdict === 'no signal' ? 'no signal' : '✘ differs',
      ]),
      [2],
    )
  );
}

function bpbSection(results: BpbResult[]): string {
  if (!results.length) return section('bpb', 'Decisive-Action BPB', empty('No BPB results in these runs.'));
  const places = rankedWithTies(results, (r) => r.bpb, 'lower');
  return section(
    'bpb',
    'Decisive-Action BPB',
    table(
      ['rank', 'checkpoint', 'BPB', 'items', 'tokens', 'bytes', 'truncated'],
      places.map(({ item: r, rank }) => [
        rank,
        r.checkpoint,
        num(r.bpb),
        r.items.length,
        r.tokens,
        r.bytes,
        r.items.filter((x) => x.truncated).length,
      ]),
      [0, 2, 3, 4, 5, 6],
    ) +
      barChart(
        'Bits per byte of the gold decisive action (lower is better)',
        places.map(({ item: r }) => ({ label: short(r.checkpoint), value: r.bpb })),
        (v) => v.toFixed(3),
      ),
  );
}

function mcqSection(data: ReportData): string {
  if (!data.mcq.length) return section('mcq', 'Patch MCQ', empty('No MCQ results in these runs.'));
  const places = rankedWithTies(data.mcq, rankingAccuracy, 'higher');
  const sorted = places.map(({ item }) => item);
  return section(
    'mcq',
    'Patch MCQ',
    table(
      ['rank', 'checkpoint', 'style', 'acc', 'acc_norm', 'acc_pmi', 'asked', `left out (<${MCQ_MIN_DISTRACTORS} distractors)`],
      places.map(({ item: r, rank }) => [
        rank,
        r.checkpoint,
        r.style,
        pct(r.acc),
        pct(r.acc_norm),
        pct(r.acc_pmi),
        r.items.length,
        r.skipped.length,
      ]),
      [0, 3, 4, 5, 6, 7],
    ) +
      barChart(
        `MCQ ${RANKING_ACCURACY_LABEL}: gold preferred over every verifier-rejected distractor`,
        sorted.map((r) => ({ label: short(r.checkpoint), value: rankingAccuracy(r) })),
        pct,
        { max: 1 },
      ),
  );
}

function passkSection(data: ReportData): string {
  if (!data.passk.length) return section('passk', 'Prefix-conditioned pass@k', empty('No pass@k results in these runs.'));
  const ks = [...new Set(data.passk.flatMap((r) => Object.keys(r.pass_at).map(Number)))].sort((a, b) => a - b);
  return section(
    'passk',
    'Prefix-conditioned pass@k',
    table(
      ['checkpoint', 'n', ...ks.map((k) => `pass@${k}`), 'unparsable'],
      data.passk.map((r) => [r.checkpoint, r.n, ...ks.map((k) => pct(r.pass_at[String(k)])), pct(r.parse_failure_rate)]),
      ks.map((_, i) => i + 1).concat(ks.length + 1, ks.length + 2),
    ) +
      barChart(
        'pass@1 at the decisive step',
        data.passk.map((r) => ({ label: short(r.checkpoint), value: r.pass_at['1'] ?? NaN })),
        pct,
        { max: 1 },
      ) +
      lineChart(
        'pass@k curves (unbiased estimator)',
        data.passk.map((r) => ({
          name: short(r.checkpoint),
          points: ks.filter((k) => Number.isFinite(r.pass_at[String(k)])).map((k) => [k, r.pass_at[String(k)]!] as [number, number]),
        })),
        { logX: true, xLabel: 'k', yLabel: 'pass@k', yMin: 0, yMax: 1 },
      ),
  );
}

const SHOWN: ValueFormat = { percent: (v) => pct(v), mean: (v) => num(v, 1) };
const show = <R>(column: Column<R>, result: R) => showValue(column.value(result), column.as, SHOWN);

/** An environment's results in its declared columns: checkpoint, leading columns, runs, pass@1, ∩@n, then its own. */
function episodesTable(env: EnvironmentDeclaration<EnvironmentResult>, results: readonly EnvironmentResult[]): string {
  const { leading, report } = env.columns;
  const headers = ['checkpoint', ...leading.map((c) => c.header), 'runs', 'pass@1', '∩@n', ...report.map((c) => c.header)];
  const firstNumeric = leading.length + 2;
  return table(
    headers,
    results.map((r) => [
      r.checkpoint,
      ...leading.map((c) => show(c, r)),
      env.size(r),
      pct(r.pass_at['1']),
      pct(r.intersection),
      ...report.map((c) => show(c, r)),
    ]),
    headers.map((_, i) => i).slice(firstNumeric),
  );
}

/** How each checkpoint's episodes ended, every ending the environment declares. */
function endingBars(env: EnvironmentDeclaration<EnvironmentResult>, results: readonly EnvironmentResult[]): string {
  return stackedBars(
    'How episodes ended',
    [...env.terminations],
    results.map((r) => ({ label: short(r.checkpoint), parts: env.terminations.map((t) => r.terminations[t] ?? 0) })),
    'episodes',
  );
}

/**
 * What one environment's section adds below its table and endings: SWE's kinds of turn (its
 * transcripts are in the drill-down), another environment's transcripts where it has the
 * report show them.
 */
function sectionExtra(env: EnvironmentDeclaration<EnvironmentResult>, data: ReportData, maxChars: number): string {
  if (!env.episodes) return turnKinds(data.asap);
  const transcriptsOf = env.episodes.transcriptsOf;
  return transcriptsOf
    ? `<h3>Transcripts</h3>${environmentTranscripts(environmentResults(data, env), transcriptsOf, data.leftOut, maxChars)}`
    : '';
}

/** One section per registered environment, in the registry's order; one with no results is left out unless it says what to show. */
function environmentSections(data: ReportData, maxChars: number): string[] {
  return ENVIRONMENTS.map((env) => {
    const results = environmentResults(data, env);
    const { id, title, whenEmpty } = env.section;
    if (!results.length) return whenEmpty ? section(id, title, empty(whenEmpty)) : '';
    return section(id, title, episodesTable(env, results) + endingBars(env, results) + sectionExtra(env, data, maxChars));
  });
}

function turnKinds(results: AsapResult[]): string {
  const b = (r: AsapResult) => r.behaviour;
  return stackedBars(
    'Model turns: a valid tool call, parsable but not a valid call, unparsable',
    ['valid call', 'parsable, invalid', 'unparsable'],
    results.map((r) => {
      // Back from the turn-weighted rates to counts: every turn is in exactly one part.
      const turns = Math.round(b(r).mean_turns * b(r).runs);
      const valid = Math.round(b(r).valid_tool_calls * turns);
      const parsable = Math.max(Math.round(b(r).parsable_turns * turns), valid);
      return { label: short(r.checkpoint), parts: [valid, parsable - valid, turns - parsable] };
    }),
    'turns',
  );
}

/** Only when the runs include APTBench items: their scores are another view, not a rung of the ladder. */
function aptbenchSection(data: ReportData): string {
  if (!data.aptbench.length) return '';
  return section(
    'aptbench',
    'APTBench items',
    table(
      ['checkpoint', 'items', 'letter acc', 'likelihood acc', 'exact match', 'ROUGE-L'],
      data.aptbench.map((r) => [
        r.checkpoint,
        r.items.length,
        pct(r.letter_acc),
        pct(r.likelihood_acc),
        pct(r.exact_match),
        num(r.rouge_l, 3),
      ]),
      [1, 2, 3, 4, 5],
    ),
  );
}

/**
 * A transcript as the report shows it: whole up to `maxChars`, else its end, saying where
 * the rest is. One that collect.ts left out (not a regular file, or leading out of its run
 * directory) is not read: the report says why in its place. It is read as a regular file
 * of its own directory (a link out of it is refused), in case it changed since collected.
 */
function shownTranscript(file: string, maxChars: number, leftOut: ReadonlyMap<string, string> | undefined): string {
  const reason = leftOut?.get(file);
  if (reason !== undefined) return `(transcript left out of this report: ${file} ${reason})`;
  if (!existsSync(file)) return `(transcript not found: ${file})`;
  let text: string;
  try {
    text = readTextFile(file, { root: dirname(file), maxBytes: MAX_STRING_BYTES, what: 'the run directory' });
  } catch (error) {
    if (error instanceof InputError) return `(transcript left out of this report: ${error.message})`;
    throw error;
  }
  return text.length > maxChars
    ? `[… ${text.length - maxChars} earlier characters not shown; the whole transcript is ${file}]\n${text.slice(-maxChars)}`
    : text;
}

function environmentTranscripts(
  results: readonly EnvironmentReport[],
  transcriptsOf: NonNullable<EnvironmentEpisodes['transcriptsOf']>,
  leftOut: ReadonlyMap<string, string> | undefined,
  maxChars: number,
): string {
  return results
    .map(
      (r) =>
        `<h4>${esc(r.checkpoint)}</h4>${((r as unknown as { items?: Record<string, unknown>[] }).items ?? [])
          .map((item) => {
            const { instance, summary, runLabel } = transcriptsOf(item);
            const files = r.transcripts?.[instance] ?? [];
            return (
              `<details class="instance"><summary>${esc(instance)}: ${esc(summary)}</summary>` +
              files
                .map((file: string) => {
                  const run = Number(/run-(\d+)\.md$/.exec(file)?.[1]);
                  return `<details class="transcript"><summary>run ${run}: ${esc(runLabel(run))}</summary><pre>${esc(shownTranscript(file, maxChars, leftOut))}</pre></details>`;
                })
                .join('') +
              '</details>'
            );
          })
          .join('')}`,
    )
    .join('');
}

function correlationSection(data: ReportData, downstream: Map<string, number> | undefined, includeControls: boolean): string {
  if (!downstream)
    return section(
      'correlation',
      'Correlation with downstream scores',
      empty('No downstream scores given (probe report … --downstream scores.csv).'),
    );
  // A control has seen the probes: its point would show a correlation the probes did not earn.
  const score = (c: string) => (!includeControls && data.controls.has(c) ? undefined : downstreamScore(downstream, c));
  const metrics: Array<{ name: string; values: Array<{ checkpoint: string; value: number }> }> = [
    { name: 'BPB', values: data.bpb.map((r) => ({ checkpoint: r.checkpoint, value: r.bpb })) },
    { name: `MCQ ${RANKING_ACCURACY_LABEL}`, values: data.mcq.map((r) => ({ checkpoint: r.checkpoint, value: rankingAccuracy(r) })) },
    { name: 'pass@1', values: data.passk.map((r) => ({ checkpoint: r.checkpoint, value: r.pass_at['1'] ?? NaN })) },
    { name: 'ASAP pass@1', values: data.asap.map((r) => ({ checkpoint: r.checkpoint, value: r.pass_at['1'] ?? NaN })) },
  ];
  let body = '';
  for (const m of metrics) {
    const points = m.values
      .filter((v) => score(v.checkpoint) !== undefined)
      .map((v) => ({ label: short(v.checkpoint), x: v.value, y: score(v.checkpoint)! }));
    if (points.length === 0) continue;
    const rho =
      points.length >= 2
        ? spearman(
            points.map((p) => p.x),
            points.map((p) => p.y),
          )
        : NaN;
    body += scatter(
      `${m.name} against the downstream score (Spearman ρ = ${Number.isFinite(rho) ? rho.toFixed(2) : 'n/a'}, ${points.length} checkpoints)`,
      points,
      { xLabel: m.name, yLabel: 'downstream score' },
    );
  }
  return section('correlation', 'Correlation with downstream scores', body || empty('None of these checkpoints has a downstream score.'));
}

function itemsSection(data: ReportData): string {
  const ids = [...new Set([...data.bpb, ...data.mcq, ...data.passk].flatMap((r) => r.items.map((i) => i.id)))];
  if (!ids.length) return section('items', 'Items', empty('No per-item results in these runs.'));
  // Looked up once per item and checkpoint: a paper-sized run has thousands of items.
  const byCheckpoint = <T extends { id: string }>(results: Array<{ checkpoint: string; items: T[] }>) =>
    new Map([...results].reverse().map((r) => [r.checkpoint, new Map(r.items.map((i) => [i.id, i]))])); // the first run of a checkpoint wins
  const bpbOf = byCheckpoint(data.bpb);
  const mcqOf = byCheckpoint(data.mcq);
  const passkOf = byCheckpoint(data.passk);
  const checkpoints = [...new Set([...data.bpb, ...data.mcq, ...data.passk].map((r) => r.checkpoint))];
  const body = ids
    .map((id) => {
      const item = data.items.get(id);
      const rows = checkpoints.map((c) => {
        const bpb = bpbOf.get(c)?.get(id);
        const mcq = mcqOf.get(c)?.get(id);
        const passk = passkOf.get(c)?.get(id);
        const pick = mcq && 'acc_norm' in mcq.pick ? mcq.pick.acc_norm : mcq && 'letter' in mcq.pick ? mcq.pick.letter : null;
        return [
          short(c),
          bpb ? num(bpb.bpb) : '–',
          mcq
            ? `${(mcq.correct_norm ?? mcq.correct) ? '✔' : '✘'} picked ${pick === 0 ? 'gold' : pick === null || pick < 0 ? 'none (tie)' : `distractor ${pick}`}`
            : '–',
          passk ? `${passk.c}/${passk.n}` : '–',
        ];
      });
      const samples = data.passk.flatMap((r) =>
        (passkOf.get(r.checkpoint)?.get(id)?.samples ?? []).map((s, k) => ({ checkpoint: r.checkpoint, k, s })),
      );
      return (
        `<details class="item"><summary><code>${esc(id)}</code> — ${esc(item?.task ?? '')}</summary>` +
        table(['checkpoint', 'BPB', 'MCQ', 'pass@k resolved'], rows) +
        (item
          ? `<h4>Context (${item.context.length} chars)</h4><pre class="context">${esc(item.context)}</pre><h4>Gold action</h4><pre class="gold">${esc(item.gold)}</pre>` +
            (item.distractors.length
              ? `<h4>Distractors (rejected by the verifier)</h4>${item.distractors.map((d, i) => `<pre class="distractor"><b>${i + 1}.</b> ${esc(d)}</pre>`).join('')}`
              : '<p class="empty">No distractors.</p>')
          : '<p class="empty">The probe set of this run is not here (or has changed since the run); only the scores are shown.</p>') +
        (samples.length
          ? `<h4>Sampled actions and verdicts</h4>${samples.map(({ checkpoint, k, s }) => `<div class="sample ${s.resolved ? 'pass' : 'fail'}"><span>${esc(short(checkpoint))} #${k + 1}: ${s.resolved ? 'resolved' : esc(s.reason)}</span><pre>${esc(s.text.length > 20_000 ? `${s.text.slice(0, 20_000)}\n[… ${s.text.length - 20_000} more characters]` : s.text)}</pre></div>`).join('')}`
          : '') +
        '</details>'
      );
    })
    .join('');
  return section('items', `Items (${ids.length})`, body);
}

function transcriptsSection(
  results: AsapResult[],
  maxChars: number,
  maxTranscripts: number,
  leftOut: ReadonlyMap<string, string> | undefined,
): string {
  if (!results.length) return section('transcripts', 'ASAP transcripts', empty('No ASAP episodes in these runs.'));
  let included = 0;
  const body = results
    .map(
      (r) =>
        `<h3>${esc(r.checkpoint)}</h3>${r.items
          .map(
            (item) =>
              `<details class="instance"><summary>${esc(item.instance)}: ${esc(`${item.c}/${item.n}`)} resolved</summary>` +
              item.runs
                .map((run) => {
                  const head = esc(
                    `run ${run.run}: ${run.resolved ? 'RESOLVED' : 'not resolved'} — ${run.termination}, ${run.steps} steps`,
                  );
                  if (included++ >= maxTranscripts) return `<p class="transcript-path">${head}: <code>${esc(run.transcript)}</code></p>`;
                  return `<details class="transcript"><summary>${head}</summary><pre>${esc(shownTranscript(run.transcript, maxChars, leftOut))}</pre></details>`;
                })
                .join('') +
              '</details>',
          )
          .join('')}`,
    )
    .join('');
  const note =
    included > maxTranscripts
      ? `<p class="meta">${maxTranscripts} of ${included} transcripts are included; the others are listed with their paths (probe report --max-transcripts N).</p>`
      : '';
  return section('transcripts', 'ASAP transcripts', note + body);
}

const STYLE = `
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:16px 24px;color:#222;line-height:1.4}
h1{margin-bottom:0}h2{border-bottom:2px solid #4e79a7;padding-bottom:4px;margin-top:36px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}th,td{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f4f6f9}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{display:block;margin:12px 0;max-width:100%;height:auto}
pre{background:#f7f7f7;border:1px solid #e5e5e5;padding:8px;white-space:pre-wrap;word-break:break-word;max-height:480px;overflow:auto;font-size:12px}
pre.gold{border-left:4px solid #59a14f}pre.distractor{border-left:4px solid #e15759}
.sample.pass span{color:#2e7d32}.sample.fail span{color:#b71c1c}
details{margin:4px 0}summary{cursor:pointer}.empty{color:#777;font-style:italic}ol.plain li{margin:2px 0}
.meta{color:#666;font-size:13px}.disagrees{color:#d62728}.control{color:#b26a00;font-size:12px}
`;

export function renderReport(data: ReportData, options: ReportOptions = {}): string {
  const title = options.title ?? 'probe report';
  const sections = [
    runsSection(data),
    rankingSection(data),
    trendSection(data),
    bpbSection(data.bpb),
    mcqSection(data),
    passkSection(data),
    ...environmentSections(data, options.maxTranscriptChars ?? 100_000),
    aptbenchSection(data),
    correlationSection(data, options.downstream, Boolean(options.includeControls)),
    itemsSection(data),
    transcriptsSection(data.asap, options.maxTranscriptChars ?? 100_000, options.maxTranscripts ?? 200, data.leftOut),
  ];
  const nav = [...REPORT_SECTIONS.slice(0, 2), ...(data.trend.length ? ['trend'] : []), ...REPORT_SECTIONS.slice(2)]
    .map((id) => `<a href="#${id}">${id}</a>`)
    .join(' · ');
  return (
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)}</title><style>${STYLE}</style></head>` +
    `<body><header><h1>${esc(title)}</h1><p class="meta">Generated ${esc((options.generatedAt ?? new Date()).toISOString())} from ${data.runs.length} run${data.runs.length === 1 ? '' : 's'} · ${nav}</p></header>` +
    `<main>${sections.join('\n')}</main></body></html>\n`
  );
}
