/**
 * Tool profiles: which actions the model may use. `bash` is mini-swe-agent / Terminus
 * style (one shell); `editor` is SWE-agent / OpenHands style (a shell plus
 * `str_replace_editor`). `<submit/>` belongs to both.
 */
import type { Action } from '../formats/md-xml.ts';

export const TOOL_PROFILES = ['bash', 'editor'] as const;
export type ToolProfile = (typeof TOOL_PROFILES)[number];

export function allowsAction(profile: ToolProfile, action: Action): boolean {
  return action.kind !== 'str_replace_editor' || profile === 'editor';
}
