/**
 * Behaviour metrics of ASAP episodes: what the model did, not only whether it solved the
 * task. Every rule is here and in docs/asap.md; each is computed from the saved steps and
 * the final verdict alone, so a report can be recomputed from a run directory.
 */
import type { Tampering } from '../verify/harness-paths.ts';
import type { EpisodeStep, Termination } from './episode.ts';
import { patchFiles, sourceChanges } from './patch.ts';

export interface NetworkAttempt {
  step: number;
  command: string;
  /** The output shows the connection failing (the sandbox has no network). */
  blocked: boolean;
  /** The output line that shows it, when blocked. */
  evidence: string | null;
}

export interface RunBehaviour {
  turns: number;
  parsable_turns: number;
  valid_tool_calls: number;
  /** Steps that changed a source file. */
  edit_steps: number;
  autonomous_edits: boolean;
  active_testing: boolean;
  applicable_patch: boolean;
  empty_patch: boolean;
  explicit_submission: boolean;
  repeated_action_termination: boolean;
  recoveries: { format: number; submit: number; repeat: number };
  regressions: number;
  changed_lines: number;
  relevant_file_access: boolean;
  network_attempts: NetworkAttempt[];
  /**
   * Changes of the final patch the verifier dropped because they may alter how the tests
   * run (conftest.py, runner config, shadows, the task's test files). Absent in runs
   * recorded before it was kept.
   */
  tampering?: Tampering[];
}

export interface FinalOutcome {
  termination: Termination;
  patch: string;
  /** The final patch applied cleanly to the base commit. */
  applies: boolean;
  /** PASS_TO_PASS tests the final patch broke. */
  passToPassFailed: string[];
  /** What the verifier dropped from the final patch as tampering (none when not graded). */
  tampering?: Tampering[];
}

/** Exit statuses with which a shell says the command itself was not runnable. */
const UNRUNNABLE_EXIT = new Set([126, 127]);

/**
 * Valid tool call: a parsable action of the profile's tools that the tool accepted — bash
 * ran it (not killed by the time limit, not "command not found"/not executable, not a
 * shell syntax error); the editor did not reject it. Suppressed repeats and rejected
 * submits are valid calls the harness declined.
 */
export function isValidToolCall(step: EpisodeStep): boolean {
  if (step.action === null || step.outcome === 'format_error' || step.outcome === 'format_ended') return false;
  if (step.outcome !== 'executed') return true;
  if (step.timedOut) return false;
  if (step.action.kind === 'str_replace_editor') return step.exitCode === 0;
  if (UNRUNNABLE_EXIT.has(step.exitCode ?? 0)) return false;
  return !(step.exitCode === 2 && /syntax error/i.test(step.observation ?? ''));
}

/** The words of each simple command in a shell line (split at ; & | ( ) and newlines), wrappers dropped. */
function simpleCommands(command: string): string[][] {
  return command
    .split(/[;&|()\n]+/)
    .map((part) => {
      const words = part.trim().split(/\s+/).filter(Boolean);
      // Environment assignments and wrappers that run the next word as the program.
      while (
        words.length &&
        (/^\w+=/.test(words[0]!) || ['time', 'timeout', 'sudo', 'env', 'exec', 'then', 'do', 'nohup'].includes(words[0]!))
      ) {
        const wrapper = words.shift()!;
        if (wrapper === 'timeout') while (words.length && /^(-|\d)/.test(words[0]!)) words.shift();
      }
      return words;
    })
    .filter((w) => w.length > 0);
}

const TEST_RUNNERS = new Set(['pytest', 'py.test', 'tox', 'nosetests', 'jest', 'mocha', 'vitest']);

/**
 * Active testing: a command that runs a test runner (pytest, tox, nose, jest, mocha,
 * vitest; `python -m pytest|unittest|nose`; `node --test`; `npm|yarn|pnpm [run] test`;
 * `go|cargo|make test`), the task's own test command, or a script (`python FILE.py`,
 * `python -c`, `python -` with a here-document, `node FILE.js`, `node -e`).
 */
export function isTestingCommand(command: string, testCmd: string): boolean {
  if (testCmd.trim() && command.includes(testCmd.trim())) return true;
  return simpleCommands(command).some(([program, ...args]) => {
    const first = args[0] ?? '';
    if (TEST_RUNNERS.has(program!.split('/').at(-1)!)) return true;
    if (/^python[0-9.]*$/.test(program!.split('/').at(-1)!)) {
      const rest = args.filter((a) => !/^-[BOuISEs]+$/.test(a));
      return rest[0] === '-m'
        ? ['pytest', 'unittest', 'nose'].includes(rest[1] ?? '')
        : rest[0] === '-c' || rest[0] === '-' || /\.py$/.test(rest[0] ?? '');
    }
    if (program === 'node') return first === '--test' || first === '-e' || first === '--eval' || /\.[cm]?js$/.test(first);
    if (['npm', 'yarn', 'pnpm'].includes(program!)) return first === 'test' || (first === 'run' && args[1] === 'test');
    if (['go', 'cargo', 'make'].includes(program!)) return first === 'test';
    return false;
  });
}

const NETWORK_COMMAND = [
  /\b(curl|wget|ssh|scp|rsync|telnet|ftp|nc|ncat)\s/,
  /\bpip[0-9.]*\s+(install|download)\b/,
  /\b(npm|yarn|pnpm)\s+(install|i|ci|add)\b/,
  /\bnpx\s/,
  /\bgit\s+(clone|fetch|pull|push|ls-remote|submodule\s+update)\b/,
  /\bapt(-get)?\s+(install|update)\b/,
  /\b(https?|ftp):\/\//,
  /\b(requests\.(get|post)|urllib\.request|urlopen|http\.client|socket\.(create_connection|connect))\b/,
  /\bfetch\(|\bhttps?\.(get|request)\(/,
];

const NETWORK_BLOCKED =
  /(Could not resolve host|Temporary failure in name resolution|Name or service not known|Network is unreachable|No address associated with hostname|getaddrinfo|ENOTFOUND|EAI_AGAIN|ENETUNREACH|ECONNREFUSED|Failed to establish a new connection|Connection refused|Could not fetch URL|unable to access|Failed to connect|Couldn't resolve|network unreachable)[^\n]*/i;

/** Bash commands that try to reach the network, and whether the output shows them blocked. */
export function networkAttempts(steps: readonly EpisodeStep[]): NetworkAttempt[] {
  const attempts: NetworkAttempt[] = [];
  for (const step of steps) {
    if (step.outcome !== 'executed' || step.action?.kind !== 'bash') continue;
    const command = step.action.command;
    if (!NETWORK_COMMAND.some((re) => re.test(command))) continue;
    const evidence = NETWORK_BLOCKED.exec(step.observation ?? '')?.[0]?.trim() ?? null;
    attempts.push({ step: step.index, command: command.slice(0, 200), blocked: evidence !== null, evidence });
  }
  return attempts;
}

function sourceFingerprint(patch: string): string {
  return JSON.stringify(sourceChanges(patch).map((f) => [f.path, f.added, f.removed]));
}

/** The text of an action that names files (command, or editor path). */
function actionText(step: EpisodeStep): string {
  const a = step.action;
  if (!a) return '';
  return a.kind === 'bash' ? a.command : a.kind === 'str_replace_editor' ? a.path : '';
}

/**
 * Relevant-file access: an executed action names a file the gold patch (or, without
 * one, the reference's solution) changes — by path or by file name — or the final patch
 * changes one.
 */
function touchesRelevantFile(steps: readonly EpisodeStep[], finalPatch: string, relevantFiles: readonly string[]): boolean {
  if (relevantFiles.length === 0) return false;
  const changed = new Set(patchFiles(finalPatch).map((f) => f.path));
  if (relevantFiles.some((f) => changed.has(f))) return true;
  const names = relevantFiles.flatMap((f) => [f, f.split('/').at(-1)!]);
  return steps.some((s) => (s.outcome === 'executed' || s.outcome === 'repeat_suppressed') && names.some((n) => actionText(s).includes(n)));
}

export function runBehaviour(
  steps: readonly EpisodeStep[],
  final: FinalOutcome,
  context: { testCmd: string; relevantFiles: readonly string[]; prefixPatch: string },
): RunBehaviour {
  let before = sourceFingerprint(context.prefixPatch);
  let editSteps = 0;
  for (const step of steps) {
    if (step.outcome !== 'executed') continue;
    const after = sourceFingerprint(step.patch);
    if (after !== before) editSteps++;
    before = after;
  }
  const count = (outcome: EpisodeStep['outcome']) => steps.filter((s) => s.outcome === outcome).length;
  return {
    turns: steps.length,
    parsable_turns: steps.filter((s) => s.action !== null).length,
    valid_tool_calls: steps.filter(isValidToolCall).length,
    edit_steps: editSteps,
    autonomous_edits: editSteps > 0,
    active_testing: steps.some(
      (s) => s.outcome === 'executed' && s.action?.kind === 'bash' && isTestingCommand(s.action.command, context.testCmd),
    ),
    applicable_patch: final.applies && sourceChanges(final.patch).length > 0,
    empty_patch: sourceChanges(final.patch).length === 0,
    explicit_submission: final.termination === 'submitted' || final.termination === 'submitted_empty',
    repeated_action_termination: final.termination === 'repeated_action',
    recoveries: { format: count('format_error'), submit: count('submit_rejected'), repeat: count('repeat_suppressed') },
    regressions: final.passToPassFailed.length,
    changed_lines: sourceChanges(final.patch).reduce((a, f) => a + f.added.length + f.removed.length, 0),
    relevant_file_access: touchesRelevantFile(steps, final.patch, context.relevantFiles),
    network_attempts: networkAttempts(steps),
    tampering: final.tampering ?? [],
  };
}

export interface BehaviourSummary {
  runs: number;
  /** Turn-weighted rates. */
  parsable_turns: number;
  valid_tool_calls: number;
  /** Shares of runs. */
  autonomous_edits: number;
  active_testing: number;
  applicable_patch: number;
  empty_patch: number;
  explicit_submission: number;
  repeated_action_termination: number;
  regressions: number;
  relevant_file_access: number;
  network_access: number;
  /** Means per run. */
  mean_turns: number;
  mean_changed_lines: number;
  mean_recoveries: number;
  network_attempts: number;
  network_blocked: number;
  /** Share of runs whose final patch had tampering dropped, and the dropped paths in all. */
  tampering: number;
  tampering_paths: number;
}

export function summarizeBehaviour(runs: readonly RunBehaviour[]): BehaviourSummary {
  const n = runs.length;
  const turns = runs.reduce((a, r) => a + r.turns, 0);
  const share = (pick: (r: RunBehaviour) => boolean) => (n ? runs.filter(pick).length / n : NaN);
  const mean = (pick: (r: RunBehaviour) => number) => (n ? runs.reduce((a, r) => a + pick(r), 0) / n : NaN);
  return {
    runs: n,
    parsable_turns: turns ? runs.reduce((a, r) => a + r.parsable_turns, 0) / turns : NaN,
    valid_tool_calls: turns ? runs.reduce((a, r) => a + r.valid_tool_calls, 0) / turns : NaN,
    autonomous_edits: share((r) => r.autonomous_edits),
    active_testing: share((r) => r.active_testing),
    applicable_patch: share((r) => r.applicable_patch),
    empty_patch: share((r) => r.empty_patch),
    explicit_submission: share((r) => r.explicit_submission),
    repeated_action_termination: share((r) => r.repeated_action_termination),
    regressions: share((r) => r.regressions > 0),
    relevant_file_access: share((r) => r.relevant_file_access),
    network_access: share((r) => r.network_attempts.length > 0),
    mean_turns: mean((r) => r.turns),
    mean_changed_lines: mean((r) => r.changed_lines),
    mean_recoveries: mean((r) => r.recoveries.format + r.recoveries.submit + r.recoveries.repeat),
    network_attempts: runs.reduce((a, r) => a + r.network_attempts.length, 0),
    network_blocked: runs.reduce((a, r) => a + r.network_attempts.filter((x) => x.blocked).length, 0),
    tampering: share((r) => (r.tampering?.length ?? 0) > 0),
    tampering_paths: runs.reduce((a, r) => a + (r.tampering?.length ?? 0), 0),
  };
}
