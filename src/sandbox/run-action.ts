/** Runs one normalized trajectory action in a sandbox, the way its scaffold would. */
import { SWE_AGENT_TOOL } from '../formats/swe-agent.ts';
import { ACTION_TIMEOUT_S } from '../protocol.ts';
import type { TrajectoryAction } from '../schema/trajectory.ts';
import { TOOLS_MOUNT } from '../sandbox/local.ts';
import type { ExecResult, Sandbox } from '../sandbox/types.ts';

const NOTHING: ExecResult = { output: '', exitCode: 0, timedOut: false, durationMs: 0, truncated: false };

/** Where the in-sandbox editors keep their state (open file, window, undo history). */
export const TOOL_STATE_FILE = '/tmp/.probe-editor-state.json';

/** The editors' state, or null when no editor has run. */
export async function readToolState(sb: Sandbox): Promise<string | null> {
  const r = await sb.exec(`cat ${TOOL_STATE_FILE} 2>/dev/null`, { timeoutMs: 10_000 });
  return r.exitCode === 0 && r.output ? r.output : null;
}

/** Puts the editors' state back (after the tree was restored), so `edit N:M` applies to the file that was open. */
export async function writeToolState(sb: Sandbox, state: string | null | undefined): Promise<void> {
  if (state) await sb.writeFile(TOOL_STATE_FILE, state);
}

/** Per-action time limit during replay. */
export const ACTION_TIMEOUT_MS = ACTION_TIMEOUT_S * 1000;

export async function runAction(sb: Sandbox, action: TrajectoryAction, timeoutMs = ACTION_TIMEOUT_MS): Promise<ExecResult> {
  switch (action.tool) {
    case 'bash':
      return sb.exec(String(action.args.command ?? ''), { timeoutMs });
    case 'str_replace_editor':
    case SWE_AGENT_TOOL:
      return sb.exec(`python3 ${TOOLS_MOUNT}/editor.py`, {
        timeoutMs,
        env: { PROBE_TOOL_ARGS: JSON.stringify({ tool: action.tool, ...action.args }) },
      });
    case 'search': {
      const term = String(action.args.search_term ?? '');
      const path = String(action.args.path ?? '.');
      return sb.exec(`grep -rn --exclude-dir=.git -F -- ${shellQuote(term)} ${shellQuote(path)}`, { timeoutMs });
    }
    default:
      // submit, and turns the scaffold rejected (tool "none"): nothing runs.
      return NOTHING;
  }
}

export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
