/**
 * Distractors: candidate actions that the *same verifier rejects* at the decisive state.
 * Candidates come from mutations of the gold action and from the trajectory's other
 * actions; each is applied at the T* state in a sandbox and kept only if the task still
 * fails there (or the action errors) and it is not byte-identical to the gold. Every
 * candidate's fate is logged with the reason.
 */
import type { LoadedTask } from '../schema/task.ts';
import type { TrajectoryAction } from '../schema/trajectory.ts';
import type { SandboxLease } from '../sandbox/pool.ts';
import { parseActionText, UnparsableAction } from '../trajectories/parse-action.ts';
import { unresolvedCauses, verifySandbox } from '../verify/verifier.ts';
import { runAction, writeToolState } from './execute.ts';
import { mutateAction } from './mutations.ts';

export interface Candidate { text: string; source: string }

export interface DistractorRecord extends Candidate {
  kept: boolean;
  /** Why it was kept (the verifier's failures, or the error) or rejected. */
  reason: string;
}

export interface DistractorResult { distractors: string[]; log: DistractorRecord[] }

/** Verdicts of actions at one state, shared by the renderings of one probe (same action → same verdict). */
export type VerdictCache = Map<string, { resolved: boolean; reason: string }>;

export interface DistractorOptions {
  task: LoadedTask;
  /** The state before T*: the tree, and the in-sandbox editors' state (open file…). */
  patch: string;
  toolState?: string | null;
  gold: string;
  /** The item's `format`, to parse candidates back into actions. */
  format: string;
  goldAction: TrajectoryAction;
  /** Candidate actions taken from the trajectory, rendered in the item's format. */
  fromTrajectory: Candidate[];
  /** Candidate actions sampled from a checkpoint at the decisive context. */
  fromSamples?: Candidate[];
  repoFiles: string[];
  lease: SandboxLease;
  cache: VerdictCache;
  /** Stop once this many are kept. */
  want?: number;
  /** Candidates tried at most. */
  budget?: number;
}

async function judge(action: TrajectoryAction, options: DistractorOptions): Promise<{ resolved: boolean; reason: string }> {
  const key = JSON.stringify({ tool: action.tool, args: action.args });
  const cached = options.cache.get(key);
  if (cached) return cached;
  const verdict = await options.lease(async (sb) => {
    await sb.restore({ base_commit: options.task.base_commit, patch: options.patch });
    await writeToolState(sb, options.toolState);
    const ran = await runAction(sb, action, 60_000);
    const v = await verifySandbox(sb, options.task);
    if (v.resolved) return { resolved: true, reason: 'the verifier accepts it' };
    const how = ran.exitCode !== 0 ? `action exited ${ran.exitCode}; ` : '';
    return { resolved: false, reason: `${how}${v.status !== 'ok' ? `verifier ${v.status}: ${v.reason}` : unresolvedCauses(v, undefined, 3)}` };
  });
  options.cache.set(key, verdict);
  return verdict;
}

export async function findDistractors(options: DistractorOptions): Promise<DistractorResult> {
  const want = options.want ?? 4;
  const budget = options.budget ?? 12;
  const mutations = mutateAction(options.gold, options.repoFiles).map((m) => ({ text: m.text, source: `mutation:${m.kind}` }));
  // Alternate sources so both kinds are tried early.
  const sources = [mutations, options.fromTrajectory, options.fromSamples ?? []];
  const queue: Candidate[] = [];
  for (let i = 0; i < Math.max(...sources.map((s) => s.length)); i++) {
    for (const source of sources) if (source[i]) queue.push(source[i]!);
  }
  const log: DistractorRecord[] = [];
  const seen = new Set<string>();
  for (const candidate of queue) {
    if (log.filter((r) => r.kept).length >= want || log.length >= budget) break;
    if (seen.has(candidate.text)) continue;
    seen.add(candidate.text);
    if (candidate.text === options.gold) {
      log.push({ ...candidate, kept: false, reason: 'byte-identical to the gold action' });
      continue;
    }
    let action: TrajectoryAction;
    try {
      action = parseActionText(candidate.text, options.format, options.goldAction);
    } catch (error) {
      if (!(error instanceof UnparsableAction)) throw error;
      log.push({ ...candidate, kept: false, reason: `not a well-formed action: ${error.message}` });
      continue;
    }
    if (action.tool === 'none') {
      log.push({ ...candidate, kept: false, reason: 'not an action' });
      continue;
    }
    const verdict = await judge(action, options);
    log.push({ ...candidate, kept: !verdict.resolved, reason: verdict.reason });
  }
  return { distractors: log.filter((r) => r.kept).map((r) => r.text), log };
}
