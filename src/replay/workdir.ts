/**
 * Where a replay puts the repository: the directory the trajectory ran in, so that its
 * absolute paths (`open /SWE-agent__test-repo/tests/x.py`) find the same files.
 *
 * Precedence: an explicit `--workdir` > the directory the trajectory shows it ran in >
 * the task's `workdir` (default /testbed). What the trajectory shows, in order of trust:
 * the working directory the scaffold recorded (SWE-agent's per-step `state`), SWE-agent's
 * `(Current directory: …)` observation footer, OpenHands' `/workspace/<repo>` paths, and
 * a `cd /dir && …` prefix on the first command that has one (mini-swe-agent).
 */
import { openHands } from '../formats/openhands.ts';
import { SWE_AGENT_TOOL } from '../formats/swe-agent.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { Trajectory, TrajectoryAction } from '../schema/trajectory.ts';

export type WorkdirSource = 'flag' | 'trajectory' | 'task';

export interface ChosenWorkdir {
  dir: string;
  source: WorkdirSource;
  /** What the choice rests on, for the user: "SWE-agent's recorded working_dir", "step 0: cd /testbed && …". */
  evidence: string;
  /** Absolute paths the trajectory's actions use that lie outside `dir`: those steps cannot see what they saw. */
  outside: OutsidePath[];
}

export interface OutsidePath {
  step: number;
  path: string;
}

interface Inferred {
  dir: string;
  evidence: string;
}

/** Top-level directories that hold the system, not a repository: paths there are never a workdir mismatch. */
const SYSTEM_ROOTS = new Set([
  'bin',
  'boot',
  'dev',
  'etc',
  'lib',
  'lib32',
  'lib64',
  'opt',
  'proc',
  'root',
  'run',
  'sbin',
  'sys',
  'tmp',
  'usr',
  'var',
]);

/** Whether a repository can be placed at `dir`: absolute, and neither `/` nor in a system directory. */
export function isUsableWorkdir(dir: string): boolean {
  const top = clean(dir).split('/')[1];
  return dir.startsWith('/') && top !== undefined && top !== '' && !SYSTEM_ROOTS.has(top);
}

/** The directory the trajectory shows it ran in (where a repository can go), or null when it shows none. */
export function inferWorkdir(trajectory: Trajectory): Inferred | null {
  const shown = shownWorkdir(trajectory);
  return shown && isUsableWorkdir(shown.dir) ? shown : null;
}

function shownWorkdir(trajectory: Trajectory): Inferred | null {
  if (trajectory.recordedWorkdir)
    return { dir: clean(trajectory.recordedWorkdir), evidence: `the working_dir ${trajectory.format} recorded in its steps' state` };
  for (const step of trajectory.steps) {
    const m = /\(Current directory: (\/[^)\n]*)\)/.exec(step.observation ?? '');
    if (m) return { dir: clean(m[1]!), evidence: `step ${step.index}'s "(Current directory: ${m[1]})"` };
  }
  if (trajectory.format === openHands.scaffold) {
    // OpenHands mounts the repository at /workspace, or for SWE-bench at /workspace/<owner>__<repo>__<version>.
    for (const pattern of [
      /(?<![\w.-])\/workspace\/([^\s/'"`;|&<>()]+__[^\s/'"`;|&<>()]+)(?![\w.-])/,
      /(?<![\w.-])\/workspace(?![\w.-])/,
    ]) {
      for (const step of trajectory.steps) {
        const m = pattern.exec(actionStrings(step.action).join('\n'));
        const dir = m ? (m[1] ? `/workspace/${m[1]}` : '/workspace') : null;
        if (dir) return { dir, evidence: `step ${step.index}'s paths under ${dir}` };
      }
    }
  }
  for (const step of trajectory.steps) {
    if (step.action.tool !== 'bash') continue;
    const m = /^\s*cd\s+(\/[^\s;&|]*)\s*(?:&&|;)/.exec(String(step.action.args.command ?? ''));
    if (m) return { dir: clean(m[1]!), evidence: `step ${step.index}: cd ${m[1]} && …` };
  }
  return null;
}

/**
 * The workdir a replay uses: explicit > inferred > the task's. An image task keeps its own:
 * the image holds the repository there, and only an explicit choice may say otherwise.
 */
export function chooseWorkdir(trajectory: Trajectory, task: LoadedTask, explicit?: string): ChosenWorkdir {
  const inferred = inferWorkdir(trajectory);
  let chosen: Omit<ChosenWorkdir, 'outside'>;
  if (explicit) chosen = { dir: clean(explicit), source: 'flag', evidence: '--workdir' };
  else if (inferred && task.repoDir) chosen = { ...inferred, source: 'trajectory' };
  else if (inferred && clean(inferred.dir) !== clean(task.workdir))
    chosen = {
      dir: task.workdir,
      source: 'task',
      evidence: `the task's workdir, where its image holds the repository; the trajectory ran in ${inferred.dir} per ${inferred.evidence}`,
    };
  else
    chosen = {
      dir: task.workdir,
      source: 'task',
      evidence: task.workdir === '/testbed' ? "the task's workdir, the default" : "the task's workdir",
    };
  return { ...chosen, outside: pathsOutside(trajectory, chosen.dir) };
}

/** The task with its repository placed at the chosen workdir. */
export function placeTask(trajectory: Trajectory, task: LoadedTask, explicit?: string): { task: LoadedTask; workdir: ChosenWorkdir } {
  const workdir = chooseWorkdir(trajectory, task, explicit);
  return { task: workdir.dir === task.workdir ? task : { ...task, workdir: workdir.dir }, workdir };
}

/** Absolute, non-system paths in the actions that lie outside `dir`. */
export function pathsOutside(trajectory: Trajectory, dir: string): OutsidePath[] {
  const root = clean(dir);
  const found: OutsidePath[] = [];
  for (const step of trajectory.steps) {
    for (const text of actionStrings(step.action)) {
      // A path starts a word: `/x` after `s` (sed's s/a/b/) or after a word character is not one.
      for (const m of text.matchAll(/(?<![\w.~$}/:-])\/[A-Za-z0-9_.@+-][^\s'"`;|&<>()]*/g)) {
        const path = m[0].replace(/[.,:]+$/, '');
        const top = path.split('/')[1]!;
        if (SYSTEM_ROOTS.has(top) || path === root || path.startsWith(`${root}/`)) continue;
        if (!found.some((f) => f.step === step.index && f.path === path)) found.push({ step: step.index, path });
      }
    }
  }
  return found;
}

/** What the action runs on: the command of a bash step, the path and arguments of an editor step. */
function actionStrings(action: TrajectoryAction): string[] {
  if (action.tool === 'bash') return [String(action.args.command ?? '')];
  if (action.tool === 'str_replace_editor') return [String(action.args.path ?? '')];
  if (action.tool === SWE_AGENT_TOOL) return ((action.args.argv as unknown[] | undefined) ?? []).map(String);
  return [];
}

function clean(dir: string): string {
  return dir.length > 1 ? dir.replace(/\/+$/, '') : dir;
}

/** Lines for the user: where the repository went and why, then each path outside it (the first few). */
export function describeWorkdir(workdir: ChosenWorkdir, trajectoryFile: string, shown = 5): string {
  const from =
    workdir.source === 'flag' ? 'from --workdir' : workdir.source === 'trajectory' ? `inferred from ${workdir.evidence}` : workdir.evidence;
  const lines = [`workdir ${workdir.dir} (${from})`];
  for (const o of workdir.outside.slice(0, shown)) {
    lines.push(
      `warning: ${trajectoryFile} step ${o.step}: ${o.path} lies outside the workdir ${workdir.dir}; the step cannot see what it saw there (pass --workdir DIR to place the repository elsewhere)`,
    );
  }
  if (workdir.outside.length > shown) lines.push(`warning: … and ${workdir.outside.length - shown} more paths outside ${workdir.dir}`);
  return `${lines.join('\n')}\n`;
}
