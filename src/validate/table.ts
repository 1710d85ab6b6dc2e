/**
 * The study as a reader takes it in: per checkpoint each probe next to each ground truth,
 * how well each probe ranks against each ground truth, the ranking each would give, and
 * what each rung cost. Every cell is read from the study's JSON document, so the tables
 * and results.json cannot disagree.
 */
import { formatPercent, formatTable, shortCheckpointName } from '../report/table.ts';
import type { Interval } from '../stats/correlation.ts';
import { CONTROL_LABEL } from '../report/checkpoint-name.ts';
import type { StudyOutcome } from './run.ts';

/** BPB is bits per byte; every other series is a rate. */
export function formatValue(series: string, v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return '-';
  return series.endsWith('bpb') ? v.toFixed(3) : formatPercent(v);
}

const LABELS: Record<string, string> = {
  code_bpb: 'code bpb',
  bpb: 'bpb',
  'mcq.acc': 'mcq acc',
  'mcq.acc_norm': 'mcq norm',
  'mcq.acc_pmi': 'mcq pmi',
  'asap.parsable_turns': 'parsable',
  'asap.valid_tool_calls': 'valid calls',
  'asap.relevant_file_access': 'relevant files',
  'asap.autonomous_edits': 'edits',
  'asap.active_testing': 'testing',
  'asap.applicable_patch': 'applicable',
  'asap.explicit_submission': 'submitted',
};

/** A series' name as a column heading: short, the rung left to the table's title (pass@k of pass@K and of ASAP alike). */
export function heading(series: string): string {
  return LABELS[series] ?? series.replace(/^(asap|passk)\./, '');
}

const signed = (v: number) => (Number.isFinite(v) ? v.toFixed(2) : 'n/a');
const interval = (i: Interval) => (Number.isFinite(i.low) ? `[${i.low.toFixed(2)}, ${i.high.toFixed(2)}]` : '');

export type StudyView = Pick<StudyOutcome, 'rows' | 'probes' | 'truths' | 'correlations' | 'costs' | 'correlated'>;

const checkpointCell = (r: StudyOutcome['rows'][number]) => `${shortCheckpointName(r.checkpoint)}${r.control ? ` ${CONTROL_LABEL}` : ''}`;

/** Per checkpoint, one column per series of `of` (probes or ground truths), each as its rung reported it. */
export function valuesTable(s: StudyView, of: 'probes' | 'truths'): { headers: string[]; rows: string[][] } {
  const names = s[of].map((x) => x.name);
  const known = of === 'probes' && s.rows.some((r) => r.heldout_code_bpb !== null);
  return {
    headers: ['checkpoint', ...(known ? ['held-out bpb'] : []), ...names.map(heading)],
    rows: s.rows.map((r) => [
      checkpointCell(r),
      ...(known ? [r.heldout_code_bpb === null ? '' : r.heldout_code_bpb.toFixed(3)] : []),
      ...names.map((n) => formatValue(n, r[of][n])),
    ]),
  };
}

function table(t: { headers: string[]; rows: string[][] }): string {
  return formatTable(t.headers, t.rows, t.headers.map((_, i) => i).slice(1));
}

export function printStudy(s: StudyView, write: (text: string) => void): void {
  write(
    `\nValidation study on ${s.rows.length} checkpoints\n\nProbes (prefix pass@K in the pass@ columns)\n\n${table(valuesTable(s, 'probes'))}\n`,
  );
  if (s.truths.length) write(`\nGround truth: ASAP (pass@k; behaviour: turn or run rates)\n\n${table(valuesTable(s, 'truths'))}\n`);
  if (s.correlations.length === 0) {
    write('\nNo correlations: they need ASAP results and at least 2 candidate checkpoints.\n');
  } else {
    const truths = s.truths.map((t) => t.name);
    const find = (probe: string, truth: string) => s.correlations.find((x) => x.probe === probe && x.truth === truth);
    write(
      `\nSpearman ρ, probe vs ground truth, over ${s.correlated.length} checkpoints (oriented: +1 ranks as the ground truth does; lower BPB counts as better)\n\n`,
    );
    write(
      `${table({
        headers: ['probe', ...truths.map((t) => `asap ${heading(t)}`)],
        rows: s.probes.map((p) => [
          p.name,
          ...truths.map((t) => {
            const c = find(p.name, t);
            return c ? signed(c.spearman) : '-';
          }),
        ]),
      })}\n`,
    );
    write(
      '\nWith Kendall τ-b and 95% bootstrap intervals (over tasks: probe and ASAP recomputed on the same drawn tasks; over checkpoints); n/a pairs (a series tied on every checkpoint) left out\n\n',
    );
    write(
      `${table({
        headers: ['ground truth', 'probe', 'ρ', 'ρ 95% (tasks)', 'ρ 95% (ckpts)', 'τ', 'τ 95% (tasks)'],
        rows: truths.flatMap((t) =>
          s.probes.flatMap((p) => {
            const c = find(p.name, t);
            return c && Number.isFinite(c.spearman)
              ? [
                  [
                    t,
                    p.name,
                    signed(c.spearman),
                    interval(c.spearman_ci_tasks),
                    interval(c.spearman_ci_checkpoints),
                    signed(c.kendall),
                    interval(c.kendall_ci_tasks),
                  ],
                ]
              : [];
          }),
        ),
      })}\n`,
    );
    if (s.correlated.length < 5)
      write(
        `probe: WARNING: only ${s.correlated.length} checkpoints: rank correlations over fewer than 5 checkpoints are not meaningful\n`,
      );
  }
  write(
    `\nRanking each would give (best first)\n\n${formatTable(
      ['by', 'ranking'],
      [...s.probes, ...s.truths].map((x) => [x.name, x.ranking.map((group) => group.map(shortCheckpointName).join(' = ')).join(' › ')]),
    )}\n`,
  );
  write(
    `\nCost of each rung (all checkpoints)\n\n${formatTable(['rung', 'wall', 'tokens scored', 'tokens sampled', 'items', 'reused'], costRows(s), [1, 2, 3, 4, 5])}\n`,
  );
}

/** Each rung's cost summed over checkpoints, in the order the study runs them. */
export function costRows(s: Pick<StudyOutcome, 'costs'>): string[][] {
  const rungs = [...new Set(s.costs.map((c) => c.rung))];
  return rungs.map((rung) => {
    const of = s.costs.filter((c) => c.rung === rung);
    const sum = (pick: (c: StudyOutcome['costs'][number]) => number) => of.reduce((a, c) => a + pick(c), 0);
    return [
      rung,
      `${(sum((c) => c.wall_ms) / 1000).toFixed(1)} s`,
      String(sum((c) => c.tokens_scored)),
      String(sum((c) => c.tokens_sampled)),
      String(sum((c) => c.items)),
      String(sum((c) => c.items_reused)),
    ];
  });
}
