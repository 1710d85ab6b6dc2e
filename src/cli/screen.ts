/**
 * `probe screen`: the ladder in one command — BPB and MCQ for every checkpoint, pass@K for
 * the best by combined rank, a shortlist by pass@1, and ASAP episodes for the shortlist.
 */
import { join } from 'node:path';
import { Command } from 'commander';
import { openBackend } from '../backends/open.ts';
import { REPO_ROOT } from '../embedded.ts';
import { scoreBpb, type BpbResult } from '../probes/bpb.ts';
import { scoreMcq, type McqResult } from '../probes/mcq.ts';
import { scorePassk, type PasskResult } from '../probes/passk.ts';
import { restoreProbeState } from '../probes/restore.ts';
import { formatTable } from '../report/table.ts';
import { openSandbox } from '../sandbox/open.ts';
import { TaskPools } from '../sandbox/pool.ts';
import { averageRanks } from '../stats/correlation.ts';
import { loadTasks } from '../verify/load-task.ts';
import { addScoringOptions, reportFailures, runOverCheckpoints, type ScoringFlags } from './checkpoint-runs.ts';
import { positiveInteger } from './args.ts';
import { runAsapOverCheckpoints } from './asap-runs.ts';
import { httpOptions } from './http-options.ts';
import { DEFAULT_PREFIX_STEPS } from '../asap/prefix.ts';

interface ScreenFlags extends ScoringFlags { shortlist: number; passkTop?: number; n: number; tasks: string; seed: number; asapRuns: number; asapMaxSteps: number; asapOut?: string; reference: string; concurrency: number }

export interface ScreenRow {
  checkpoint: string;
  bpb: number;
  mcq_acc: number;
  mcq_acc_norm: number | null;
  /** Mean of the BPB rank and the MCQ rank (1 = best). */
  cheap_rank: number;
  pass_at: Record<string, number> | null;
  shortlisted: boolean;
  /** ASAP on the shortlist: Pass@1, Intersection@n and the headline behaviour rates. */
  asap: { pass_at_1: number; intersection: number; parsable_turns: number; valid_tool_calls: number; autonomous_edits: number } | null;
}

export function screenCommand(): Command {
  return addScoringOptions(new Command('screen')
    .description('Run the ladder: BPB and MCQ for all, pass@K for the best, a shortlist for post-training, ASAP episodes for the shortlist.')
    .option('--shortlist <n>', 'checkpoints to recommend', positiveInteger, 2)
    .option('--passk-top <n>', 'checkpoints that get pass@K (default: twice the shortlist)', positiveInteger)
    .option('-n, --n <n>', 'pass@K samples per item', positiveInteger, 8)
    .option('--seed <n>', 'sampling seed', (v) => Number.parseInt(v, 10), 0)
    .option('--tasks <dir|file>', 'task records of the probes\' tasks (and of the ASAP episodes)', join(REPO_ROOT, 'verifiers'))
    .option('--asap-runs <n>', 'ASAP episodes per instance for each shortlisted checkpoint (0: none)', (v) => Number.parseInt(v, 10), 2)
    .option('--asap-max-steps <n>', 'model steps per ASAP episode', positiveInteger, 30)
    .option('--reference <dir>', 'reference trajectories for the ASAP prefixes', join(REPO_ROOT, 'trajectories'))
    .option('--asap-out <dir>', 'ASAP run directory (a rerun resumes it); default: runs/asap-<settings hash>')
    .option('--concurrency <n>', 'ASAP episodes at once', positiveInteger, 2))
    .addHelpText('after', '\nExample:\n  probe screen --probes probes/demo.jsonl --shortlist 2')
    .action(async (flags: ScreenFlags) => {
      const cheap = await runOverCheckpoints(flags, (all) => all, async (ckpt, backend, items, tick) => {
        const bpb = await scoreBpb(ckpt, backend, items);
        const mcq = await scoreMcq(ckpt, backend, items, 'likelihood', flags.seed, tick);
        return { bpb, mcq };
      });
      const results = cheap.results as Array<{ bpb: BpbResult; mcq: McqResult }>;
      const bpbRank = averageRanks(results.map((r) => r.bpb.bpb));
      const mcqRank = averageRanks(results.map((r) => -r.mcq.acc));
      const rows: ScreenRow[] = results.map((r, i) => ({
        checkpoint: r.bpb.checkpoint, bpb: r.bpb.bpb, mcq_acc: r.mcq.acc, mcq_acc_norm: r.mcq.acc_norm,
        cheap_rank: (bpbRank[i]! + mcqRank[i]!) / 2, pass_at: null, shortlisted: false, asap: null,
      })).sort((a, b) => a.cheap_rank - b.cheap_rank || a.bpb - b.bpb);

      const http = httpOptions(flags, flags.ckpt);
      const top = rows.slice(0, flags.passkTop ?? 2 * flags.shortlist);
      const tasks = new Map(loadTasks(flags.tasks).map((t) => [t.instance_id, t]));
      const pools = new TaskPools((t) => openSandbox('local', t), 2);
      const leaseFor = pools.leaseFor;
      try {
        for (const row of top) {
          const backend = await openBackend(row.checkpoint, { http });
          try {
            const result: PasskResult = await scorePassk(row.checkpoint, backend, cheap.items.filter((i) => tasks.has(i.task)), {
              n: flags.n, ks: [1, 2, 4, 8, 16].filter((k) => k <= flags.n), temperature: 0.7, topP: 0.95, maxTokens: 1024, seed: flags.seed,
              taskOf: (item) => tasks.get(item.task)!, leaseFor, restore: restoreProbeState,
            });
            row.pass_at = result.pass_at;
          } finally {
            await backend.close();
          }
        }
      } finally {
        await pools.close();
      }
      // The shortlist: pass@1 among those that got pass@K, ties broken by the cheap rank.
      const ranked = [...top].sort((a, b) => (b.pass_at?.['1'] ?? 0) - (a.pass_at?.['1'] ?? 0) || a.cheap_rank - b.cheap_rank);
      for (const row of ranked.slice(0, flags.shortlist)) row.shortlisted = true;
      const shortlist = ranked.slice(0, flags.shortlist).map((r) => r.checkpoint);
      // The last rung: whole episodes for the shortlist only, on the tasks the probes come from.
      let asapOut: string | null = null;
      const failures = [...cheap.failures];
      if (flags.asapRuns > 0 && shortlist.length > 0) {
        const probeTasks = new Set(cheap.items.map((i) => i.task));
        const asap = await runAsapOverCheckpoints(shortlist, [...tasks.values()].filter((t) => probeTasks.has(t.instance_id)), {
          tasksPath: flags.tasks, reference: flags.reference, runs: flags.asapRuns, concurrency: flags.concurrency, profile: 'bash', format: 'md+xml',
          prefixSteps: DEFAULT_PREFIX_STEPS, maxSteps: flags.asapMaxSteps, maxTokens: 2048, temperature: 0.7, topP: 0.95, seed: flags.seed,
          actionTimeoutS: 120, sandbox: 'local', out: flags.asapOut, quiet: Boolean(flags.json), http,
        });
        asapOut = asap.out;
        failures.push(...asap.failures);
        for (const r of asap.results) {
          const row = rows.find((x) => x.checkpoint === r.checkpoint)!;
          row.asap = { pass_at_1: r.pass_at['1']!, intersection: r.intersection, parsable_turns: r.behaviour.parsable_turns, valid_tool_calls: r.behaviour.valid_tool_calls, autonomous_edits: r.behaviour.autonomous_edits };
        }
      }
      const errors = reportFailures(failures);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ results: rows, shortlist, asap_out: asapOut, ...errors }, null, 2)}\n`);
        return;
      }
      const pct = (v: number | undefined | null) => (v === undefined || v === null ? '-' : `${(100 * v).toFixed(1)}%`);
      process.stderr.write(`\nScreening ${rows.length} checkpoints on ${cheap.items.length} probe items\n\n`);
      process.stderr.write(`${formatTable(['checkpoint', 'bpb', 'mcq acc', 'cheap rank', 'pass@1', `pass@${flags.n}`, 'asap pass@1', 'asap parsable', 'asap edits', 'shortlist'],
        rows.map((r) => [r.checkpoint, r.bpb.toFixed(3), pct(r.mcq_acc), r.cheap_rank.toFixed(1), pct(r.pass_at?.['1']), pct(r.pass_at?.[String(flags.n)]),
          pct(r.asap?.pass_at_1), pct(r.asap?.parsable_turns), pct(r.asap?.autonomous_edits), r.shortlisted ? 'yes' : '']),
        [1, 2, 3, 4, 5, 6, 7, 8])}\n\n`);
      process.stderr.write(`Recommendation: post-train ${shortlist.join(', ')}\n`);
      if (asapOut) process.stderr.write(`ASAP transcripts of the shortlist: ${join(asapOut, 'episodes')}\n`);
    });
}
