/**
 * The terminal tools in the md+xml transcript. Each step is free thinking, then exactly one of:
 *
 *   <keystrokes duration="1">ls -la
 *   </keystrokes>          (terminus profile) text typed into the shell — a newline is
 *                          Enter — or one tmux key name alone (C-c); the screen comes back
 *                          after `duration` seconds (default 1, at most MAX_DURATION_S)
 *   <bash>ls -la</bash>    (bash profile) one command in a fresh shell; its output comes back
 *   <submit/>              the task is done: the tests decide
 */

import { fromXmlText, toXmlText } from '../formats/xml-text.ts';

export const TERMINAL_PROFILES = ['terminus', 'bash'] as const;
export type TerminalProfile = (typeof TERMINAL_PROFILES)[number];

export type TerminalAction =
  | { kind: 'keystrokes'; keys: string; duration: number }
  | { kind: 'bash'; command: string }
  | { kind: 'submit' };

export const DEFAULT_DURATION_S = 1;
/** A step waits at most this long for the screen; longer work goes on while the model thinks. */
export const MAX_DURATION_S = 60;

/** The strings at which a terminal action is complete. */
export const TERMINAL_STOPS: readonly string[] = ['</keystrokes>', '</bash>', '<submit/>'];

export type FoundTerminalAction =
  | { ok: true; action: TerminalAction; thought: string; end: number }
  | { ok: false; complete: boolean; error: string };

const OPEN = /<keystrokes\b([^>]*)>|<bash>|<submit\s*\/>/;

/** The first action of a completion, or why there is none (`complete: false`: sampling may go on). */
export function findTerminalAction(completion: string): FoundTerminalAction {
  const opened = OPEN.exec(completion);
  if (!opened) return { ok: false, complete: false, error: 'no action element (<keystrokes>, <bash> or <submit/>)' };
  const thought = completion.slice(0, opened.index).trim();
  if (opened[0].startsWith('<submit')) return { ok: true, action: { kind: 'submit' }, thought, end: opened.index + opened[0].length };
  const tag = opened[0].startsWith('<bash') ? 'bash' : 'keystrokes';
  const close = `</${tag}>`;
  const at = completion.indexOf(close, opened.index);
  if (at < 0) return { ok: false, complete: false, error: `<${tag}> is not closed` };
  const end = at + close.length;
  const raw = fromXmlText(completion.slice(opened.index + opened[0].length, at));
  if (tag === 'bash') {
    const command = raw.trim();
    if (!command) return { ok: false, complete: true, error: '<bash> is empty' };
    return { ok: true, action: { kind: 'bash', command }, thought, end };
  }
  const attrs = Object.fromEntries([...(opened[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
  const duration = attrs.duration === undefined ? DEFAULT_DURATION_S : Number(attrs.duration);
  if (!Number.isFinite(duration) || duration < 0)
    return { ok: false, complete: true, error: `duration must be a number of seconds ≥ 0, not "${attrs.duration}"` };
  // The element's first line break is layout, not a keystroke.
  const keys = raw.replace(/^\r?\n/, '');
  if (!keys) return { ok: false, complete: true, error: '<keystrokes> is empty' };
  return { ok: true, action: { kind: 'keystrokes', keys, duration: Math.min(duration, MAX_DURATION_S) }, thought, end };
}

export function renderTerminalAction(action: TerminalAction): string {
  switch (action.kind) {
    case 'submit':
      return '<submit/>';
    case 'bash':
      return `<bash>\n${toXmlText(action.command.replace(/\n+$/, ''))}\n</bash>`;
    case 'keystrokes':
      return `<keystrokes duration="${action.duration}">\n${toXmlText(action.keys)}</keystrokes>`;
  }
}

/** The example action the task text and the format hint show, per profile. */
export function exampleAction(profile: TerminalProfile): string {
  return renderTerminalAction(
    profile === 'terminus' ? { kind: 'keystrokes', keys: 'ls -la\n', duration: DEFAULT_DURATION_S } : { kind: 'bash', command: 'ls -la' },
  );
}
