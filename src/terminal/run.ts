/**
 * Terminal-Bench episodes of one checkpoint: `runs` episodes per task (seeds derived from
 * the run's seed, the task and the run index, the same for every checkpoint), each in a
 * fresh container where the reference prefix is replayed first, graded by the task's tests;
 * pass@k and Intersection@n over tasks, as for SWE episodes. Finished episodes are read back
 * from the memo (a killed run resumes episode by episode).
 */
import type { CompletionBackend } from '../backends/types.ts';
import type { ItemHooks } from '../probes/memo.ts';
import {
  countTerminations,
  type EpisodeJob,
  type EpisodeRunOptions,
  type EpisodesResult,
  meanOver,
  passSummary,
  runCheckpointEpisodes,
} from '../asap/episodes.ts';
import type { Tampering } from '../verify/harness-paths.ts';
import { TerminalContainer } from './container.ts';
import {
  runTerminalEpisode,
  TERMINAL_TERMINATIONS,
  type TerminalBehaviour,
  type TerminalEpisodeSettings,
  type TerminalStep,
  type TerminalTermination,
  terminalBehaviour,
} from './episode.ts';
import type { TerminalImage } from './image.ts';
import { replaySteps, type TerminalPrefix } from './prefix.ts';
import type { TerminalTask } from './task.ts';

export interface TerminalInstance {
  task: TerminalTask;
  image: TerminalImage;
  prefix: TerminalPrefix;
}

export interface TerminalEpisodeRecord {
  task_id: string;
  run: number;
  seed: number;
  resolved: boolean;
  reward: number | null;
  reason: string | null;
  termination: TerminalTermination;
  behaviour: TerminalBehaviour;
  steps: TerminalStep[];
  /** The end of test.sh's output. */
  verifier_output: string;
  /** What the agent planted where the grader would load it (removed before the tests, or never read); absent in older runs. */
  tampering?: Tampering[];
}

export interface TerminalResult extends EpisodesResult<TerminalTermination> {
  env: 'terminal';
  profile: TerminalEpisodeSettings['profile'];
  tasks: number;
  behaviour: {
    actions: number;
    parsable_turns: number;
    submitted: number;
    failed_commands: number;
    key_presses: number;
    mean_turns: number;
  };
  items: Array<{ task_id: string; n: number; c: number; rewards: Array<number | null> }>;
}

export interface TerminalRunOptions extends Omit<TerminalEpisodeSettings, 'seed' | 'agentTimeoutMs'>, EpisodeRunOptions {}

async function runOneEpisode(
  backend: CompletionBackend,
  { instance, run, seed }: EpisodeJob<TerminalInstance>,
  options: TerminalRunOptions,
): Promise<TerminalEpisodeRecord> {
  const { task, image, prefix } = instance;
  const container = await TerminalContainer.start(task, image);
  try {
    if (options.profile === 'terminus') await container.startShell();
    await replaySteps(container, prefix.steps, options.profile, options.actionTimeoutMs);
    const episode = await runTerminalEpisode(backend, container, prefix.text, {
      ...options,
      seed,
      agentTimeoutMs: task.agentTimeoutSec * 1000,
      label: `the episode of ${task.id}, run ${run}`,
    });
    const grade = await container.verify(task);
    return {
      task_id: task.id,
      run,
      seed,
      resolved: grade.resolved,
      reward: grade.reward,
      reason: grade.reason,
      termination: episode.termination,
      behaviour: terminalBehaviour(episode.steps),
      steps: episode.steps,
      verifier_output: grade.output,
      tampering: grade.tampering,
    };
  } finally {
    await container.close();
  }
}

export function runTerminal(
  checkpoint: string,
  backend: CompletionBackend,
  instances: readonly TerminalInstance[],
  options: TerminalRunOptions,
  hooks: ItemHooks<TerminalEpisodeRecord> = {},
): Promise<TerminalResult> {
  return runCheckpointEpisodes(
    backend,
    instances,
    options,
    {
      idOf: (instance) => instance.task.id,
      runOne: (job) => runOneEpisode(backend, job, options),
      summarize: (records) => summarize(checkpoint, backend.id, options, instances, records),
    },
    hooks,
  );
}

function summarize(
  checkpoint: string,
  backendId: string,
  options: TerminalRunOptions,
  instances: readonly TerminalInstance[],
  records: readonly TerminalEpisodeRecord[],
): TerminalResult {
  const items = instances.map(({ task }) => {
    const mine = records.filter((r) => r.task_id === task.id).sort((a, b) => a.run - b.run);
    return { task_id: task.id, n: mine.length, c: mine.filter((r) => r.resolved).length, rewards: mine.map((r) => r.reward) };
  });
  const mean = (f: (r: TerminalEpisodeRecord) => number) => meanOver(records, f);
  const { pass_at, solvedAlways } = passSummary(items, options.runs);
  return {
    checkpoint,
    backend: backendId,
    env: 'terminal',
    profile: options.profile,
    runs: options.runs,
    tasks: instances.length,
    pass_at,
    intersection: items.length ? solvedAlways / items.length : 0,
    behaviour: {
      actions: mean((r) => r.behaviour.actions),
      parsable_turns: mean((r) => r.behaviour.parsable_turns),
      submitted: mean((r) => Number(r.behaviour.submitted)),
      failed_commands: mean((r) => r.behaviour.failed_commands),
      key_presses: mean((r) => r.behaviour.key_presses),
      mean_turns: mean((r) => r.steps.length),
    },
    terminations: countTerminations(TERMINAL_TERMINATIONS, records),
    items,
  };
}
