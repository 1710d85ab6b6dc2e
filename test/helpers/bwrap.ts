/**
 * Tests that need the local bubblewrap jail run wherever one can be made; with
 * PROBE_REQUIRE_BWRAP set (CI), a missing jail fails them instead of skipping.
 */
import { hasBubblewrap } from '../../src/sandbox/local.ts';

export const bwrapUp = hasBubblewrap();
if (!bwrapUp && process.env.PROBE_REQUIRE_BWRAP) {
  throw new Error('PROBE_REQUIRE_BWRAP is set but bubblewrap cannot make a jail here');
}
export const skipWithoutBwrap = !bwrapUp;
