/** `probe build`: replay every trajectory against its task and write probe items at T*. */
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import { describeCause, InputError } from '../errors.ts';
import { probeItemFrom, taskForTrajectory, withDistractors, type RestoreMode } from '../replay/build.ts';
import type { VerdictCache } from '../replay/distractors.ts';
import { SandboxPool } from '../sandbox/pool.ts';
import { CONTEXT_FORMATS, type ContextFormat } from '../replay/render-context.ts';
import { replayTrajectory } from '../replay/replay.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { createProgress } from '../report/progress.ts';
import { importTrajectory } from '../trajectories/import.ts';
import { loadTasks } from '../verify/load-task.ts';
import { checkCheckpoint, openBackend } from '../backends/open.ts';
import { positiveInteger } from './args.ts';
import { addSandboxOptions, replayOptions, type SandboxFlags } from './sandbox-options.ts';

interface BuildFlags extends SandboxFlags { trajectories: string; tasks: string; out: string; context: ContextFormat[]; restore: RestoreMode; distractors: boolean; distractorCkpt?: string; distractorSamples: number; json?: boolean }

function trajectoryFiles(dir: string): string[] {
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new InputError({ file: dir }, 'not a directory of trajectories');
  return readdirSync(dir).filter((f) => !f.startsWith('.')).sort().map((f) => join(dir, f)).filter((f) => statSync(f).isFile());
}

export function buildCommand(): Command {
  return addSandboxOptions(new Command('build')
    .description('Replay trajectories against their tasks and write a probe item at each decisive step.')
    .requiredOption('--trajectories <dir>', 'trajectory files, each named <instance_id>.<anything>')
    .requiredOption('--tasks <dir|file>', 'task records (<id>/task.json entries or SWE-bench JSONL)')
    .requiredOption('--out <file>', 'probe items to write (.jsonl)')
    .addOption(new Option('--context <formats...>', 'how contexts are rendered').choices([...CONTEXT_FORMATS]).default(['native']))
    .addOption(new Option('--restore <mode>', 'how a probe restores the state before T*: base commit + cumulative patch, or replaying the earlier actions').choices(['patch', 'replay']).default('patch'))
    .option('--no-distractors', 'skip distractor search (each candidate costs a verifier run)')
    .option('--distractor-ckpt <dir>', 'also offer actions sampled from this checkpoint at T* as distractor candidates')
    .option('--distractor-samples <n>', 'samples drawn per item with --distractor-ckpt', positiveInteger, 8)
    .option('--json', 'print a JSON summary on stdout'))
    .addHelpText('after', '\nExample:\n  probe build --trajectories trajectories --tasks verifiers --out probes/demo.jsonl --context native asap')
    .action(async (flags: BuildFlags) => {
      const tasks = loadTasks(flags.tasks);
      if (flags.distractorCkpt) checkCheckpoint(flags.distractorCkpt);
      const samplerBackend = flags.distractorCkpt && flags.distractors ? await openBackend(flags.distractorCkpt) : undefined;
      const sampler = samplerBackend ? { name: flags.distractorCkpt!, backend: samplerBackend, n: flags.distractorSamples, seed: 0 } : undefined;
      const files = trajectoryFiles(flags.trajectories);
      const root = resolve(flags.trajectories, '..');
      const items: ProbeItem[] = [];
      const outcomes: Array<{ trajectory: string; task: string | null; decisiveStep: number | null; rejected: string | null }> = [];
      let inputErrors = 0;
      const progress = createProgress({ total: files.length, enabled: !flags.json });
      for (const file of files) {
        const task = taskForTrajectory(file, tasks);
        try {
          if (!task) throw new InputError({ file }, 'no task whose instance_id starts its file name');
          const trajectory = importTrajectory(file);
          const options = replayOptions(flags);
          const pool = new SandboxPool(options.openSandbox, task, flags.concurrency);
          try {
            const replay = await replayTrajectory(trajectory, task, { ...options, pool });
            const cache: VerdictCache = new Map();
            const repoFiles = replay.decisiveStep ? (await pool.lease((sb) => sb.exec('git ls-files'))).output.split('\n').filter(Boolean) : [];
            for (const format of flags.context) {
              const item = probeItemFrom(trajectory, task, replay, format, root, flags.restore);
              if (item) items.push(flags.distractors ? await withDistractors(item, trajectory, task, replay, format, pool.lease, cache, repoFiles, sampler) : item);
            }
            outcomes.push({ trajectory: file, task: task.instance_id, decisiveStep: replay.decisiveStep?.index ?? null, rejected: replay.rejected });
          } finally {
            await pool.close();
          }
        } catch (error) {
          if (!(error instanceof InputError)) throw error;
          // A bad file is recorded as a rejection; the other trajectories are still built.
          inputErrors++;
          outcomes.push({ trajectory: file, task: task?.instance_id ?? null, decisiveStep: null, rejected: describeCause(error) });
        }
        progress.tick(); progress.label(file);
      }
      progress.stop();
      await samplerBackend?.close();
      mkdirSync(dirname(resolve(flags.out)), { recursive: true });
      writeFileSync(flags.out, items.map((i) => JSON.stringify(i)).join('\n') + (items.length ? '\n' : ''));
      if (flags.json) process.stdout.write(`${JSON.stringify({ out: flags.out, items: items.length, trajectories: outcomes }, null, 2)}\n`);
      else {
        for (const o of outcomes) process.stderr.write(`${o.rejected ? 'rejected' : `T* = ${o.decisiveStep}`.padEnd(8)}  ${o.trajectory}${o.rejected ? `: ${o.rejected}` : ''}\n`);
        process.stderr.write(`\n${items.length} probe items from ${outcomes.filter((o) => !o.rejected).length} of ${files.length} trajectories → ${flags.out}\n`);
      }
      if (inputErrors) process.exitCode = 2;
    });
}
