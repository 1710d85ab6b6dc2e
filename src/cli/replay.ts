/** `probe replay`: replay one trajectory in its task's environment and show T*. */
import { Command, Option } from 'commander';
import { InputError } from '../errors.ts';
import { formatTable } from '../report/table.ts';
import { describeMissingAtBase, replayTrajectory, type ReplayStep } from '../replay/replay.ts';
import { describeWorkdir } from '../replay/workdir.ts';
import { SCAFFOLDS, type ScaffoldName } from '../formats/registry.ts';
import { importTrajectory } from '../trajectories/import.ts';
import { loadTaskFile } from '../verify/load-task.ts';
import type { StableVerdict, Verdict } from '../verify/verifier.ts';
import { IMAGE_NAMESPACE_HELP, parseImageNamespace } from '../swebench/image-name.ts';
import { addSandboxOptions, replaySettings, type SandboxFlags } from './sandbox-options.ts';
import { sandboxReplayOptions } from '../replay/sandbox-replay.ts';

/** Each path the verifier dropped as tampering, with the first step whose state had it. */
function tamperingLines(steps: ReplayStep[]): string {
  const seen = new Map<string, string>();
  for (const s of steps) {
    for (const t of s.tampering ?? [])
      if (!seen.has(t.path)) seen.set(t.path, `  step ${s.index}: ${JSON.stringify(t.path)} — ${t.reason}`);
  }
  return seen.size ? `dropped from grading as tampering (the rest of the state was graded):\n${[...seen.values()].join('\n')}\n\n` : '';
}

/** A state's verdict for scripts: per list, which tests passed, failed in the log, or are not in it; the full log stays out. */
function verdictJson(v: Verdict | StableVerdict | null) {
  if (!v) return null;
  return {
    resolved: v.resolved,
    status: v.status,
    reason: v.reason ?? null,
    exitCode: v.exitCode,
    failToPass: v.failToPass,
    passToPass: v.passToPass,
    ...('flaky' in v ? { flaky: v.flaky, runs: v.runs } : {}),
  };
}

interface ReplayFlags extends SandboxFlags {
  task: string;
  format?: ScaffoldName;
  json?: boolean;
  imageNamespace?: string | null;
}

export function replayCommand(): Command {
  return addSandboxOptions(
    new Command('replay')
      .description('Replay a successful trajectory, verify after every step that edits, and find the decisive step T*.')
      .argument('<trajectory>', 'trajectory file (mini-swe-agent, SWE-agent, OpenHands, R2E-Gym, ASAP log)')
      .requiredOption(
        '--task <file>',
        'the task record: task.json, or a one-row dataset file as published (SWE-bench .jsonl, .json, .parquet)',
      )
      .option('--image-namespace <ns>', IMAGE_NAMESPACE_HELP, parseImageNamespace)
      .addOption(new Option('--format <format>', 'trajectory format (default: detected)').choices([...SCAFFOLDS]))
      .option('--json', 'print one JSON document on stdout'),
  )
    .addHelpText(
      'after',
      '\nExample:\n  probe replay trajectories/shop__pricing-1.mini.traj.json --task verifiers/shop__pricing-1/task.json --sandbox docker',
    )
    .action(async (file: string, flags: ReplayFlags) => {
      const tasks = await loadTaskFile(flags.task, { imageNamespace: flags.imageNamespace });
      if (tasks.length !== 1) throw new InputError({ file: flags.task }, `holds ${tasks.length} tasks; replay needs exactly one`);
      const trajectory = importTrajectory(file, flags.format);
      const result = await replayTrajectory(trajectory, tasks[0]!, sandboxReplayOptions(replaySettings(flags)));
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify(
            {
              task: result.task,
              trajectory: result.trajectory,
              format: result.format,
              sandbox: result.sandbox,
              workdir: result.workdir,
              steps: result.steps.map((s) => ({
                index: s.index,
                action: s.action.text,
                kind: s.action.kind,
                edits: s.edits,
                resolved: s.resolved,
                tampering: s.tampering,
                exitCode: s.exitCode,
                drift: s.drift,
                timedOut: s.timedOut,
                output: s.output,
                verdict: verdictJson(s.verdict),
              })),
              decisiveStep: result.decisiveStep,
              rejected: result.rejected,
              verifierRuns: result.verifierRuns,
              meanDrift: result.meanDrift,
              base: verdictJson(result.base),
              final: verdictJson(result.final),
              missingAtBase: result.missingAtBase,
            },
            null,
            2,
          )}\n`,
        );
      } else {
        const rows = result.steps.map((s) => [
          s.index === result.decisiveStep?.index ? `${s.index} *` : String(s.index),
          s.action.kind,
          String(s.action.tool === 'bash' || s.action.tool === 'submit' ? (s.action.args.command ?? s.action.text) : s.action.text)
            .replace(/\s+/g, ' ')
            .trim()
            .slice(0, 60),
          s.edits ? 'yes' : '',
          s.resolved === null ? '' : s.resolved ? 'pass' : 'fail',
          s.drift === null ? '' : s.drift.toFixed(2),
        ]);
        process.stderr.write(
          `\n${result.task} ← ${file} (${result.format}, ${result.sandbox} sandbox)\n${describeWorkdir(result.workdir, file)}\n`,
        );
        process.stderr.write(`${formatTable(['step', 'kind', 'action', 'edits', 'tests', 'drift'], rows, [5])}\n\n`);
        process.stderr.write(tamperingLines(result.steps));
        if (result.missingAtBase) process.stderr.write(`${describeMissingAtBase(result.missingAtBase)}\n\n`);
        process.stderr.write(result.decisiveStep ? `T* = step ${result.decisiveStep.index}\n` : `no decisive step: ${result.rejected}\n`);
      }
      if (result.rejected) process.exitCode = 1;
    });
}
