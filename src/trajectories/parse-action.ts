/**
 * From an action's text, as a probe item renders it, back to a runnable action. Used for
 * distractors (mutated gold text) and for sampled continuations (pass@K).
 */
import { ProbeError } from '../errors.ts';
import type { TrajectoryAction } from '../schema/trajectory.ts';
import { bashAction, editorAction, submitAction, sweAgentAction } from './actions.ts';
import { normalizeMdXml } from './formats/asap.ts';
import { functionCallAction } from './formats/r2e-gym.ts';
import { findAction, parseAction } from './mdxml-parse.ts';

export class UnparsableAction extends ProbeError {}

const FENCE: Record<string, string> = { 'mini-swe-agent-1': 'bash', 'mini-swe-agent-1.1': 'mswea_bash_command' };

/** Items whose actions are md+xml elements: md+xml contexts, and ASAP logs rendered natively (their own format is md+xml). */
export function writesMdXml(format: string): boolean {
  return format === 'md+xml' || format === 'native:asap';
}

/**
 * `format` is a probe item's `format` (`md+xml` or `native:<scaffold>`); `like` is the gold
 * action, which tells which tool a scaffold's bare arguments belong to (OpenHands).
 */
export function parseActionText(text: string, format: string, like?: TrajectoryAction): TrajectoryAction {
  if (writesMdXml(format)) {
    const found = findAction(text);
    if (!found) throw new UnparsableAction('no complete md+xml action element');
    const element = text.slice(found.start, found.end);
    try {
      return normalizeMdXml(parseAction(element), element);
    } catch (error) {
      throw new UnparsableAction(error instanceof Error ? error.message : String(error));
    }
  }
  const scaffold = format.replace(/^native:/, '');
  if (scaffold in FENCE) {
    const blocks = [...text.matchAll(new RegExp(`\`\`\`${FENCE[scaffold]}\\s*\\n([\\s\\S]*?)\\n\`\`\``, 'g'))];
    if (blocks.length !== 1) throw new UnparsableAction(`expected exactly one \`\`\`${FENCE[scaffold]} block, found ${blocks.length}`);
    return bashAction(blocks[0]![0], blocks[0]![1]!);
  }
  if (scaffold === 'swe-agent') {
    const body = /^```\n?([\s\S]*?)\n?```$/.exec(text.trim())?.[1] ?? text;
    return sweAgentAction(body);
  }
  if (scaffold === 'r2e-gym') return functionCallAction(text);
  if (scaffold === 'openhands') {
    let args: Record<string, unknown>;
    try {
      args = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new UnparsableAction(`tool-call arguments are not JSON: ${error instanceof Error ? error.message : error}`);
    }
    if (like?.tool === 'submit') return submitAction(text, args);
    if (like?.tool === 'str_replace_editor' || 'path' in args) return editorAction(text, args);
    return bashAction(text, String(args.command ?? ''));
  }
  throw new UnparsableAction(`unknown action format ${format}`);
}
