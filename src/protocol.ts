/**
 * The protocol defaults (../shared/mission.md), written once. Each stage's settings
 * default from here, and the verbs show these values as their flag defaults; a value
 * that is not the protocol's is the caller's choice, recorded in run.json.
 */

/** How every probe samples unless told otherwise: temperature 0.7, top-p 0.95. */
export const SAMPLING = { temperature: 0.7, topP: 0.95 } as const;

/** New tokens for one sampled action (pass@K, distractor sampling): an action is shorter than a whole ASAP step. */
export const ACTION_MAX_TOKENS = 1024;

/** Seconds one action may run, in a replay and in an ASAP episode. */
export const ACTION_TIMEOUT_S = 120;

/** The k of reported pass@k; a run reports those up to its n. */
export const PASS_AT_K: readonly number[] = [1, 2, 4, 8, 16, 32, 64];

/** The k of pass@k a run of n samples (or n episodes) can report. */
export function passAtKs(n: number): number[] {
  return PASS_AT_K.filter((k) => k <= n);
}

/**
 * An ASAP episode (mission.md "Protocol"): the md+xml transcript, a 3-step reference
 * prefix, ≤ 30 model steps of ≤ 2048 new tokens, 8 runs per instance, 120 s per action.
 * (Observations are cut at 100,000 characters: `OBSERVATION_LIMIT`, formats/md-xml.ts.)
 */
export const ASAP_PROTOCOL = {
  format: 'md+xml',
  prefixSteps: 3,
  maxSteps: 30,
  maxTokens: 2048,
  runs: 8,
  actionTimeoutS: ACTION_TIMEOUT_S,
  ...SAMPLING,
} as const;
