/**
 * Docker-backed tests run whenever a daemon answers; with PROBE_REQUIRE_DOCKER set (CI),
 * a missing daemon fails them instead of skipping.
 */
import { dockerAvailable } from '../../src/sandbox/docker.ts';

export const dockerUp = await dockerAvailable();
if (!dockerUp && process.env.PROBE_REQUIRE_DOCKER) {
  throw new Error('PROBE_REQUIRE_DOCKER is set but no Docker engine answers');
}
export const skipWithoutDocker = !dockerUp;
