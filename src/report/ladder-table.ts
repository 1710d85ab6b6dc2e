/** The screen's ladder as a reader takes it in: one table with every rung, each probe against the known order, the recommendation. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ENVIRONMENTS } from '../environments/registry.ts';
import { RANKING_ACCURACY_LABEL } from '../probes/mcq.ts';
import { CONTROL_LABEL } from './checkpoint-name.ts';
import type { LadderRow } from '../schema/ladder-row.ts';
import { ladderMcqAccuracy } from './collect.ts';
import { knownOrder } from './known-order.ts';
import { formatPercent, formatTable, shortCheckpointName } from './table.ts';

/** What the table shows of a ladder's outcome. */
export interface LadderSummary {
  rows: LadderRow[];
  shortlist: string[];
  /** Where the shortlist's ASAP transcripts are, if ASAP ran. */
  asapOut: string | null;
  /** Where the other environment kinds' transcripts are, where the ladder ran them. */
  envOuts?: Record<string, string>;
}

/** The ladder's table and recommendation, on stderr. */
export function printLadder(outcome: LadderSummary, items: number, n: number): void {
  process.stderr.write(`\nScreening ${outcome.rows.length} checkpoints on ${items} probe items\n\n`);
  const known = outcome.rows.some((r) => typeof r.heldout_code_bpb === 'number');
  // ASAP in the other environment kinds, where the ladder ran them: one column each, beside SWE's.
  const envs = ENVIRONMENTS.filter((e) => e.episodes && outcome.rows.some((r) => r.asap_envs?.[e.name])).map((e) => e.name);
  process.stderr.write(
    `${formatTable(
      [
        'checkpoint',
        ...(known ? ['held-out bpb'] : []),
        'bpb',
        `mcq ${RANKING_ACCURACY_LABEL}`,
        'cheap rank',
        'pass@1',
        `pass@${n}`,
        'asap pass@1',
        'asap parsable',
        'asap edits',
        ...envs.map((env) => `${env} pass@1`),
        'shortlist',
      ],
      outcome.rows.map((r) => [
        r.control ? `${r.checkpoint} ${CONTROL_LABEL}` : r.checkpoint,
        ...(known ? [typeof r.heldout_code_bpb === 'number' ? r.heldout_code_bpb.toFixed(3) : ''] : []),
        r.bpb.toFixed(3),
        formatPercent(ladderMcqAccuracy(r)),
        r.cheap_rank.toFixed(1),
        formatPercent(r.pass_at?.['1']),
        formatPercent(r.pass_at?.[String(n)]),
        formatPercent(r.asap?.pass_at_1),
        formatPercent(r.asap?.parsable_turns),
        formatPercent(r.asap?.autonomous_edits),
        ...envs.map((env) => formatPercent(r.asap_envs?.[env]?.pass_at_1)),
        r.shortlisted ? 'yes' : '',
      ]),
      Array.from({ length: (known ? 9 : 8) + envs.length }, (_, i) => i + 1),
    )}\n\n`,
  );
  const order = knownOrder(outcome.rows);
  if (order) {
    const name = (c: string) => shortCheckpointName(c);
    process.stderr.write(`Known order (held-out code BPB): ${order.known.map((k) => name(k.checkpoint)).join(' › ')}\n`);
    for (const check of order.checks) {
      process.stderr.write(
        `  ${check.metric.padEnd(12)} ${check.verdict}: ${check.order.map((g) => g.map(name).join(' = ')).join(' › ')} (Kendall τ ${Number.isFinite(check.kendall) ? check.kendall.toFixed(2) : 'n/a'})\n`,
      );
    }
    process.stderr.write('\n');
  }
  const controls = outcome.rows.filter((r) => r.control && !r.shortlisted).map((r) => r.checkpoint);
  if (controls.length) process.stderr.write(`Controls (have seen the probes; a ceiling, not candidates): ${controls.join(', ')}\n`);
  process.stderr.write(`Recommendation: post-train ${outcome.shortlist.join(', ') || 'none'}\n`);
  // With --slurm, each shortlisted checkpoint's episodes are in its own job's directory under asapOut.
  const episodes = outcome.asapOut && join(outcome.asapOut, 'episodes');
  if (episodes)
    process.stderr.write(`ASAP transcripts of the shortlist: ${existsSync(episodes) ? episodes : `${outcome.asapOut}/*/asap/episodes`}\n`);
  for (const env of ENVIRONMENTS.filter((e) => envs.includes(e.name)))
    process.stderr.write(`${env.section.title} of the shortlist: asap-${env.name}/episodes in the run directory\n`);
}
