/**
 * Distractors: near misses of the decisive action that the *same verifier rejects* at the
 * decisive state. A Patch MCQ option must be an alternative to the gold of the same kind,
 * else the choice is between "an edit" and "a short read-only command", which total
 * likelihood settles by length. So a candidate is kept only when, run at the T* state in a
 * sandbox:
 *
 * - it changes the working tree (an edit: judged by the tree before and after, never by
 *   the command's text — `cat`, `ls -R`, `grep`, a test run, `submit` change nothing);
 * - every file it changes is one the gold edits or one the trajectory's earlier actions
 *   named (read, listed, grepped) — a near miss of *this* fix, not a stray write;
 * - the verifier still fails there;
 * - its length is within LENGTH_BAND of the gold's bytes (0.5× to 2×): neither a much
 *   shorter nor a much longer text than the gold, so no option wins on length alone;
 * - it is not byte-identical to the gold.
 *
 * Candidates come from mutations of the gold and actions sampled at T* from a checkpoint
 * (and the trajectory's other editing steps). Every candidate's fate is logged with the reason.
 */
import type { LoadedTask } from '../schema/task.ts';
import type { TrajectoryAction } from '../schema/trajectory.ts';
import type { SandboxPool } from '../sandbox/pool.ts';
import { UnparsableAction } from '../formats/action-format.ts';
import { formatOf } from '../formats/registry.ts';
import { gradeSandbox, unresolvedCauses } from '../verify/verifier.ts';
import { runAction, writeToolState } from '../sandbox/run-action.ts';
import { mutateAction } from './mutations.ts';
import { changedFiles } from './tree-change.ts';

export interface Candidate {
  text: string;
  source: string;
}

export interface DistractorRecord extends Candidate {
  kept: boolean;
  /** Why it was kept (the verifier's failures, or the error) or rejected. */
  reason: string;
  /** Files the candidate changed at the T* state (absent when it was not run). */
  changed?: string[];
}

export interface DistractorResult {
  distractors: string[];
  log: DistractorRecord[];
}

/** What running one action at the T* state did: the files it changed and, when it changed any, the verifier's verdict. */
export interface Verdict {
  changed: string[];
  resolved: boolean;
  reason: string;
}

/** Verdicts of actions at one state, shared by the renderings of one probe (same action → same verdict). */
export type VerdictCache = Map<string, Verdict>;

/**
 * An option's UTF-8 length, as a multiple of the gold's, must lie in [min, max]. 0.5×–2×:
 * the near misses of a one-line fix differ from it by a few bytes, while the options that
 * made MCQ a length contest (`cat file`, `submit` against a 100-byte edit) fall outside.
 */
export const LENGTH_BAND = { min: 0.5, max: 2 } as const;

export interface DistractorOptions {
  task: LoadedTask;
  /** The state before T*: the tree, and the in-sandbox editors' state (open file…). */
  patch: string;
  toolState?: string | null;
  gold: string;
  /** The item's `format`, to parse candidates back into actions. */
  format: string;
  goldAction: TrajectoryAction;
  /** Files the gold changes at T*, and files the trajectory's actions before T* name: where an option may write. */
  allowedFiles: { gold: string[]; read: string[] };
  /** Candidate actions taken from the trajectory, rendered in the item's format. */
  fromTrajectory: Candidate[];
  /** Candidate actions sampled from a checkpoint at the decisive context. */
  fromSamples?: Candidate[];
  repoFiles: string[];
  /** Sandboxes the candidates run in, and the ones that grade what they leave. */
  sandboxes: Pick<SandboxPool, 'lease' | 'graders'>;
  cache: VerdictCache;
  /** Stop once this many are kept. */
  want?: number;
  /** Candidates run in a sandbox at most (the checks before running cost nothing). */
  budget?: number;
}

async function judge(action: TrajectoryAction, options: DistractorOptions): Promise<Verdict> {
  const key = JSON.stringify({ tool: action.tool, args: action.args });
  const cached = options.cache.get(key);
  if (cached) return cached;
  const verdict = await options.sandboxes.lease(async (sb): Promise<Verdict> => {
    await sb.restore({ base_commit: options.task.base_commit, patch: options.patch });
    await writeToolState(sb, options.toolState);
    const before = await sb.diff();
    const ran = await runAction(sb, action, 60_000);
    const changed = changedFiles(before, await sb.diff());
    const how = ran.exitCode !== 0 ? `action exited ${ran.exitCode}; ` : '';
    if (changed.length === 0) return { changed, resolved: false, reason: `${how}changes no file at the T* state: not an edit` };
    const v = await gradeSandbox(sb, options.sandboxes.graders, options.task);
    if (v.resolved) return { changed, resolved: true, reason: 'the verifier accepts it' };
    return {
      changed,
      resolved: false,
      reason: `${how}${v.status !== 'ok' ? `verifier ${v.status}: ${v.reason}` : unresolvedCauses(v, undefined, 3)}`,
    };
  });
  options.cache.set(key, verdict);
  return verdict;
}

/** Why a verdict does not make a distractor, or null when it does. */
function rejection(verdict: Verdict, allowed: DistractorOptions['allowedFiles']): string | null {
  if (verdict.changed.length === 0) return verdict.reason;
  const elsewhere = verdict.changed.filter((f) => !allowed.gold.includes(f) && !allowed.read.includes(f));
  if (elsewhere.length) return `edits ${elsewhere.join(', ')}: neither a file the gold edits nor one the trajectory read`;
  if (verdict.resolved) return verdict.reason;
  return null;
}

const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

export async function findDistractors(options: DistractorOptions): Promise<DistractorResult> {
  const want = options.want ?? 4;
  const budget = options.budget ?? 16;
  const mutations = mutateAction(options.gold, options.repoFiles).map((m) => ({ text: m.text, source: `mutation:${m.kind}` }));
  // Alternate sources so each kind is tried early.
  const sources = [mutations, options.fromSamples ?? [], options.fromTrajectory];
  const queue: Candidate[] = [];
  for (let i = 0; i < Math.max(...sources.map((s) => s.length)); i++) {
    for (const source of sources) if (source[i]) queue.push(source[i]!);
  }
  const goldBytes = bytes(options.gold);
  const band = [Math.ceil(goldBytes * LENGTH_BAND.min), Math.floor(goldBytes * LENGTH_BAND.max)] as const;
  const log: DistractorRecord[] = [];
  const seen = new Set<string>();
  let ran = 0;
  for (const candidate of queue) {
    if (log.filter((r) => r.kept).length >= want || ran >= budget) break;
    if (seen.has(candidate.text)) continue;
    seen.add(candidate.text);
    const reject = (reason: string) => log.push({ ...candidate, kept: false, reason });
    if (candidate.text === options.gold) {
      reject('byte-identical to the gold action');
      continue;
    }
    const length = bytes(candidate.text);
    if (length < band[0] || length > band[1]) {
      reject(`${length} bytes: outside ${LENGTH_BAND.min}×–${LENGTH_BAND.max}× the gold's ${goldBytes} (${band[0]}–${band[1]})`);
      continue;
    }
    let action: TrajectoryAction;
    try {
      action = formatOf(options.format).parse(candidate.text, options.goldAction);
    } catch (error) {
      if (!(error instanceof UnparsableAction)) throw error;
      reject(`not a well-formed action: ${error.message}`);
      continue;
    }
    if (action.tool === 'none') {
      reject('not an action');
      continue;
    }
    if (action.kind === 'submit' || action.tool === 'submit') {
      reject('a submission, not an edit');
      continue;
    }
    ran++;
    const verdict = await judge(action, options);
    const why = rejection(verdict, options.allowedFiles);
    log.push({ ...candidate, kept: why === null, reason: why ?? verdict.reason, changed: verdict.changed });
  }
  return { distractors: log.filter((r) => r.kept).map((r) => r.text), log };
}
