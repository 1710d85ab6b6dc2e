/**
 * The reference prefix of an instance: the first K steps (thought, action, observation)
 * of a reference trajectory, rendered in the episode's format, the same for every
 * checkpoint. The actions are executed once in a jailed sandbox so the episode starts
 * from the state they leave (a reproduction script the reference wrote exists).
 *
 * A prefix is refused when it leaks the answer: when its text or the tree it leaves
 * contains a distinctive added line of the task's gold patch or of the reference's own
 * solution (its final source changes).
 */
import { InputError } from '../errors.ts';
import { readToolState, runAction, shellQuote } from '../sandbox/run-action.ts';
import { toMdXml } from '../formats/md-xml-format.ts';
import { nativeFormat } from '../formats/registry.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { Trajectory, TrajectoryStep } from '../schema/trajectory.ts';
import { treeDiff } from '../sandbox/git-state.ts';
import type { Sandbox } from '../sandbox/types.ts';
import type { Action } from '../formats/md-xml.ts';
import type { AsapFormat } from '../formats/asap-transcripts.ts';
import { isTestPath, patchFiles, sourceChanges } from './patch.ts';
import type { ToolProfile } from './profiles.ts';

/** The prefix would show the model the answer; the instance cannot be run with it. */
export class PrefixLeakError extends InputError {}

/** Added lines shorter than this (trimmed) are too common to prove a leak (`}`, `return x`). */
export const MIN_LEAK_LINE = 8;

export interface PrefixStep {
  /** Index of the step in the reference trajectory. */
  from: number;
  thought: string;
  action: Action;
  observation: string;
}

export interface AsapPrefix {
  instance: string;
  reference: string;
  steps: PrefixStep[];
  /** Task and steps in the episode's format; the loop appends the cue for the next step. */
  text: string;
  /** The working tree and editor state the prefix leaves. */
  state: { patch: string; toolState: string | null };
  /** Source files the reference's solution changes (relevant files when the task has no gold patch). */
  solutionFiles: string[];
}

export interface PrefixOptions {
  steps: number;
  profile: ToolProfile;
  format: AsapFormat;
}

export function renderPrefixText(problemStatement: string, steps: readonly PrefixStep[], format: AsapFormat): string {
  let text = format.renderTask(problemStatement);
  for (const step of steps) text += format.cue + format.renderStep(step) + format.renderObservation(step.observation);
  return text;
}

/**
 * A reference action as the profile's own tools can say it. The `bash` profile has no
 * editor: viewing becomes `cat -n` / `ls -R`, creating a file a here-document; other
 * editor commands cannot be said exactly and the prefix is refused.
 */
async function inProfile(
  step: TrajectoryStep,
  profile: ToolProfile,
  sb: Sandbox,
  file: string,
): Promise<{ action: Action; converted: boolean }> {
  const action = toMdXml(step.action);
  if (action.kind !== 'str_replace_editor' || profile === 'editor') return { action, converted: false };
  const path = shellQuote(action.path);
  if (action.command === 'view') {
    const isDir = (await sb.exec(`test -d ${path}`, { timeoutMs: 10_000 })).exitCode === 0;
    return { action: { kind: 'bash', command: isDir ? `ls -R ${path}` : `cat -n ${path}` }, converted: true };
  }
  if (action.command === 'create' && action.fileText !== undefined && !action.fileText.includes('\nPROBE_EOF\n')) {
    return {
      action: {
        kind: 'bash',
        command: `mkdir -p "$(dirname ${path})" && cat > ${path} <<'PROBE_EOF'\n${action.fileText.replace(/\n$/, '')}\nPROBE_EOF`,
      },
      converted: true,
    };
  }
  throw new InputError(
    { file, field: `steps[${step.index}]` },
    `reference step ${step.index} is a str_replace_editor ${action.command}, which the bash profile cannot express exactly; use --profile editor`,
  );
}

/** Distinctive lines a patch adds to existing source files: the evidence a leak would show. */
async function distinctiveLines(
  patch: string,
  sb: Sandbox,
  baseCommit: string,
  onlySource: boolean,
): Promise<Array<{ path: string; line: string }>> {
  const lines: Array<{ path: string; line: string }> = [];
  const files = onlySource ? sourceChanges(patch) : patchFiles(patch).filter((f) => !isTestPath(f.path));
  for (const file of files) {
    const base = await sb.exec(`git show ${baseCommit}:${shellQuote(file.path)} 2>/dev/null`, { timeoutMs: 30_000 });
    const existing = new Set((base.exitCode === 0 ? base.output : '').split('\n').map((l) => l.trim()));
    for (const raw of file.added) {
      const line = raw.trim();
      if (line.length >= MIN_LEAK_LINE && /[A-Za-z0-9]/.test(line) && !existing.has(line)) lines.push({ path: file.path, line });
    }
  }
  return lines;
}

/**
 * Builds the prefix in `sb` (restored to the base commit first) and checks it for leaks.
 * Leaves the sandbox in an unspecified state: episodes restore `prefix.state`.
 */
export async function buildPrefix(trajectory: Trajectory, task: LoadedTask, options: PrefixOptions, sb: Sandbox): Promise<AsapPrefix> {
  const file = trajectory.source;
  await sb.restore({ base_commit: task.base_commit, patch: '' });
  const usable = trajectory.steps.filter((s) => s.action.tool !== 'none');
  const steps: PrefixStep[] = [];
  for (const step of usable) {
    if (steps.length >= options.steps || step.action.tool === 'submit') break;
    const { action, converted } = await inProfile(step, options.profile, sb, file);
    const ran = await runAction(
      sb,
      converted ? { text: '', kind: 'bash', tool: 'bash', args: { command: (action as { command: string }).command } } : step.action,
    );
    const observation =
      !converted && step.observation !== null ? nativeFormat(trajectory.format).recordedOutput(step.observation) : ran.output;
    steps.push({ from: step.index, thought: step.thought.trim() || '(no thought recorded)', action, observation });
  }
  const state = { patch: await treeDiff(sb, task.base_commit), toolState: await readToolState(sb) };
  const text = renderPrefixText(task.problem_statement, steps, options.format);

  // The reference's solution: its final source changes, from running the rest of it.
  for (const step of usable.slice(steps.length)) await runAction(sb, step.action);
  const solution = await treeDiff(sb, task.base_commit);
  const evidence = [
    ...(task.patch ? (await distinctiveLines(task.patch, sb, task.base_commit, false)).map((e) => ({ ...e, of: 'the gold patch' })) : []),
    ...(await distinctiveLines(solution, sb, task.base_commit, true)).map((e) => ({ ...e, of: "the reference's solution" })),
  ];
  const prefixAdds = new Set(patchFiles(state.patch).flatMap((f) => f.added.map((l) => l.trim())));
  for (const e of evidence) {
    const where = text.includes(e.line) ? 'its text' : prefixAdds.has(e.line) ? 'the tree it leaves' : undefined;
    if (where) {
      throw new PrefixLeakError(
        { file, field: `steps[0..${steps.at(-1)?.from ?? 0}]` },
        `the ${steps.length}-step prefix leaks ${e.of}: ${where} contains the added line ${JSON.stringify(e.line)} (${e.path}); use a reference whose first steps do not edit the fix, or fewer --prefix-steps`,
      );
    }
  }
  return { instance: task.instance_id, reference: file, steps, text, state, solutionFiles: sourceChanges(solution).map((f) => f.path) };
}
