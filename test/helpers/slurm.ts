/**
 * Tests against a real Slurm cluster (scripts/start-slurm.sh starts a one-node one) run
 * wherever a controller answers; with PROBE_REQUIRE_SLURM set (CI), a missing cluster fails
 * them instead of skipping.
 */
import { jobStates, slurmAvailable } from '../../src/slurm/jobs.ts';
import { isFinalState, type JobState } from '../../src/slurm/state.ts';

export const slurmUp = await slurmAvailable();
if (!slurmUp && process.env.PROBE_REQUIRE_SLURM) {
  throw new Error('PROBE_REQUIRE_SLURM is set but no Slurm cluster answers (bash scripts/start-slurm.sh starts one)');
}
export const skipWithoutSlurm = !slurmUp;

/** Polls job `id` every 250 ms until `done` holds for its state; throws, with the last state, after `timeoutMs`. */
export async function waitForJob(id: string, done: (state: JobState) => boolean, timeoutMs = 60_000): Promise<JobState> {
  const deadline = Date.now() + timeoutMs;
  let state: JobState | undefined;
  while (Date.now() < deadline) {
    state = (await jobStates([id])).get(id)!;
    if (done(state)) return state;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`job ${id} did not get there within ${timeoutMs} ms; last state ${JSON.stringify(state)}`);
}

/** Polls job `id` until it has ended (a final state, or forgotten). */
export function waitForEnd(id: string, timeoutMs?: number): Promise<JobState> {
  return waitForJob(id, (s) => !s.known || isFinalState(s.state), timeoutMs);
}
