/** Probe building: replay each trajectory against its task and turn T* into a probe item. */
import { basename, relative } from 'node:path';
import type { LoadedTask } from '../schema/task.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { Trajectory } from '../schema/trajectory.ts';
import { sampleOne } from '../backends/single.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { sampledActionText } from '../formats/action-format.ts';
import { toMdXml } from '../formats/md-xml-format.ts';
import { renderAction } from '../formats/md-xml.ts';
import { itemFormat } from '../formats/registry.ts';
import { SWE_AGENT_TOOL } from '../formats/swe-agent.ts';
import { MCQ_MIN_DISTRACTORS } from '../schema/probe-item.ts';
import type { SandboxPool } from '../sandbox/pool.ts';
import { findDistractors, type Candidate, type VerdictCache } from './distractors.ts';
import { renderProbeContext, type ContextFormat } from './render-context.ts';
import { changedFiles } from './tree-change.ts';
import type { ReplayResult } from './replay.ts';
import { ACTION_MAX_TOKENS, SAMPLING } from '../protocol.ts';

/** What tells a task's trajectories apart: a dataset row's label, else the file name after `<instance_id>.`, without the extension. */
function trajectoryLabel(trajectory: Trajectory, task: LoadedTask): string {
  if (trajectory.label) return trajectory.label;
  return (
    basename(trajectory.source)
      .slice(task.instance_id.length + 1)
      .replace(/\.(traj\.json|traj|json|md)$/, '') || 'traj'
  );
}

/**
 * How a probe restores the environment before T*: `patch` (base commit + cumulative patch,
 * the default) or `replay` (re-run the earlier actions, when state outside the tree matters).
 */
export type RestoreMode = 'patch' | 'replay';

export function probeItemFrom(
  trajectory: Trajectory,
  task: LoadedTask,
  replay: ReplayResult,
  format: ContextFormat,
  root: string,
  restore: RestoreMode = 'patch',
): ProbeItem | undefined {
  if (!replay.decisiveStep) return undefined;
  const index = replay.decisiveStep.index;
  // A windowed-editor edit has no md+xml form that would run: such a gold would not pass its own verifier.
  if (format === 'asap' && trajectory.steps[index]!.action.tool === SWE_AGENT_TOOL) return undefined;
  const rendered = renderProbeContext(trajectory, index, format);
  const step = replay.steps.find((s) => s.index === index)!;
  return {
    id: `${task.instance_id}@${trajectoryLabel(trajectory, task)}${format === 'asap' ? ':asap' : ''}`,
    task: task.instance_id,
    format: rendered.format,
    context: rendered.context,
    gold: rendered.gold,
    distractors: [],
    decisive_step: index,
    state:
      restore === 'patch'
        ? {
            kind: 'patch',
            base_commit: task.base_commit,
            patch: step.patchBefore,
            ...(step.toolStateBefore ? { tool_state: step.toolStateBefore } : {}),
          }
        : { kind: 'replay', base_commit: task.base_commit, actions: index },
    // Its gold and context may name absolute paths there (`open /SWE-agent__test-repo/…`): pass@K samples must run where it ran.
    workdir: replay.workdir.dir,
    source: { file: relative(root, trajectory.source), format: trajectory.format },
    replay: { sandbox: replay.sandbox, mean_drift: replay.meanDrift, verifier_states: replay.verifierRuns.states },
  };
}

/**
 * The trajectory's other editing actions (those the replay saw change the tree), rendered as
 * the item renders its gold. Read-only steps are never offered: an option must be an edit.
 */
function trajectoryCandidates(trajectory: Trajectory, replay: ReplayResult, format: ContextFormat): Candidate[] {
  const decisive = replay.decisiveStep!.index;
  const edited = new Set(replay.steps.filter((s) => s.edits).map((s) => s.index));
  return trajectory.steps
    .filter((s) => s.index !== decisive && edited.has(s.index))
    .map((s) => ({
      text: format === 'native' ? s.action.text.replace(/\n+$/, '') : renderAction(toMdXml(s.action)),
      source: `trajectory:step ${s.index} (edit)`,
    }));
}

/**
 * Where an option may write: the files the gold changes at T* (from the replay's trees) and
 * the repository files the trajectory read before T* — named by an earlier action, or
 * opening a line of an earlier observation as `path:` (grep's matches).
 */
export function allowedFiles(
  trajectory: Trajectory,
  replay: ReplayResult,
  decisive: number,
  repoFiles: string[],
): { gold: string[]; read: string[] } {
  const step = replay.steps.find((s) => s.index === decisive)!;
  const earlier = trajectory.steps.filter((s) => s.index < decisive);
  const named = (f: string) =>
    earlier.some((s) => s.action.text.includes(f) || (s.observation ?? '').split('\n').some((line) => line.startsWith(`${f}:`)));
  return { gold: changedFiles(step.patchBefore, step.patchAfter), read: repoFiles.filter(named) };
}

/** Adds verifier-rejected distractors (and the log of every candidate) to a probe item. */
export async function withDistractors(
  item: ProbeItem,
  trajectory: Trajectory,
  task: LoadedTask,
  replay: ReplayResult,
  format: ContextFormat,
  sandboxes: Pick<SandboxPool, 'lease' | 'graders'>,
  cache: VerdictCache,
  repoFiles: string[],
  sampler?: DistractorSampler,
): Promise<ProbeItem> {
  const decisive = trajectory.steps[item.decisive_step]!;
  const fromSamples = sampler ? await sampledCandidates(item, sampler) : [];
  const state = replay.steps.find((s) => s.index === item.decisive_step)!.patchBefore;
  const { distractors, log } = await findDistractors({
    task,
    patch: state,
    toolState: replay.steps.find((s) => s.index === item.decisive_step)!.toolStateBefore,
    gold: item.gold,
    format: item.format,
    goldAction: decisive.action,
    allowedFiles: allowedFiles(trajectory, replay, item.decisive_step, repoFiles),
    fromTrajectory: trajectoryCandidates(trajectory, replay, format),
    fromSamples,
    repoFiles,
    sandboxes,
    cache,
  });
  return {
    ...item,
    distractors,
    distractor_log: log,
    ...(distractors.length < MCQ_MIN_DISTRACTORS ? { flags: [`fewer than ${MCQ_MIN_DISTRACTORS} distractors`] } : {}),
  };
}

/** A checkpoint whose samples at T* are offered as distractor candidates (`--distractor-ckpt`). */
export interface DistractorSampler {
  name: string;
  backend: CompletionBackend;
  n: number;
  seed: number;
}

async function sampledCandidates(item: ProbeItem, sampler: DistractorSampler): Promise<Candidate[]> {
  const samples = await sampleOne(sampler.backend, {
    prompt: item.context,
    n: sampler.n,
    ...SAMPLING,
    maxTokens: ACTION_MAX_TOKENS,
    stop: [...itemFormat(item).stops],
    seed: sampler.seed,
    label: `distractor samples for probe item ${item.id}`,
  });
  return samples.map((s, i) => ({ text: sampledActionText(itemFormat(item), s), source: `sample:${sampler.name}#${i}` }));
}
