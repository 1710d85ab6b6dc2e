/**
 * A probe-set build's progress log (`<out>.progress.jsonl`, store/unit-log.ts): one line per
 * trajectory built, read back when an interrupted build is resumed. The schema mirrors the
 * interfaces of pipeline/build.ts; test/run-records.test.ts checks, by type, that the two
 * say the same.
 */
import { z } from 'zod';
import { ProbeItem } from './probe-item.ts';
import { anyNumber } from './record-fields.ts';

/** pipeline/build.ts `TrajectoryOutcome`. */
export const TrajectoryOutcomeSchema = z.object({
  trajectory: z.string(),
  task: z.string().nullable(),
  /** Absent in a build's progress log written before outcomes had a status (countOutcomes reads those). */
  status: z.enum(['accepted', 'rejected', 'flaky', 'bad-input']).optional(),
  decisiveStep: anyNumber.nullable(),
  rejected: z.string().nullable(),
});

/** pipeline/build.ts `TrajectoryBuild`: one finished trajectory of a probe-set build's progress log (store/unit-log.ts). */
export const TrajectoryBuildSchema = z.object({ outcome: TrajectoryOutcomeSchema, items: z.array(ProbeItem) });
