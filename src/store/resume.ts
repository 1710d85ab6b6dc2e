/**
 * The one rule for continuing stored work, used by run directories (run.json), ASAP stores
 * (asap.json) and unit logs (a probe-set build's progress): where work is stored, it is
 * continued only when asked to, and only under the settings it was started with. The
 * first setting that differs is named (file and field) with both values, so a rerun never
 * mixes results of two settings and never silently starts over on top of finished work.
 */
import { InputError } from '../errors.ts';

export interface ResumeCheck {
  /** The file that records the settings (where an error points). */
  file: string;
  /** The stored settings, or undefined when nothing was stored (or nothing computed under them). */
  stored: Record<string, unknown> | undefined;
  settings: Record<string, unknown>;
  /** `--resume` was passed; `implicit` where a caller above already decided (a part of a run directory). */
  resume: boolean | 'implicit';
  /** Why stored work is not continued without `--resume`, and what to do. */
  refusal: string;
  /** The message for a setting that differs: `field` is its dotted name. */
  differs: (field: string, was: unknown, now: unknown) => string;
}

/** The settings (by key) that differ between stored work and the run asking to continue it, compared as JSON. */
export function changedSettings(previous: Record<string, unknown>, next: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(previous), ...Object.keys(next)])].filter(
    (key) => JSON.stringify(previous[key]) !== JSON.stringify(next[key]),
  );
}

/** `new` where nothing is stored; `resumed` where the stored work may be continued; otherwise bad input (exit 2). */
export function checkResume(check: ResumeCheck): 'new' | 'resumed' {
  if (check.stored === undefined) return 'new';
  if (check.resume === false) throw new InputError({ file: check.file }, check.refusal);
  const [field] = changedSettings(check.stored, check.settings);
  if (field !== undefined)
    throw new InputError({ file: check.file, field }, check.differs(field, check.stored[field], check.settings[field]));
  return 'resumed';
}

/** Settings nested under a prefix (`config.n`), so one comparison names the nested field. */
export function flattenSettings(prefix: string, settings: Record<string, unknown> | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(settings ?? {}).map(([key, value]) => [`${prefix}.${key}`, value]));
}
