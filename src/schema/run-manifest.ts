/**
 * run.json, as a run directory holds it (store/run-dir.ts `RunManifest`): read back when a
 * run resumes and when a report collects it. The schema mirrors the interface; fields that
 * runs from before them lack are optional here (the readers already allow for them).
 */
import { z } from 'zod';
import { anyNumber } from './record-fields.ts';

/** backends/bos.ts `BosRecord`: how `--bos` resolved for a checkpoint. */
export const BosRecordSchema = z.object({
  policy: z.enum(['auto', 'always', 'never']),
  used: z.boolean(),
  bos_id: anyNumber.nullable(),
  source: z.string(),
});

export const CheckpointRecordSchema = z.object({
  name: z.string(),
  /** Absent in runs from before checkpoints were keyed by absolute path (readers fall back to the name). */
  path: z.string().optional(),
  content_hash: z.string().nullable(),
  control: z.boolean().optional(),
  heldout_code_bpb: anyNumber.nullable().optional(),
  bos: BosRecordSchema.optional(),
  engine: z.string().optional(),
});

export const RunManifestSchema = z.object({
  verb: z.string(),
  probe_version: z.string(),
  git: z.object({ commit: z.string().nullable(), dirty: z.boolean().nullable() }),
  created: z.string(),
  /** Readers allow for its absence (`resumed ?? []`). */
  resumed: z.array(z.string()).optional(),
  argv: z.array(z.string()),
  config: z.record(z.string(), z.unknown()),
  checkpoints: z.array(CheckpointRecordSchema),
  probe_set: z.object({ source: z.string(), sha256: z.string(), items: anyNumber }).nullable(),
  seeds: z.record(z.string(), anyNumber),
});

/**
 * run.json as a report reads it: the verb, and any other field it has checked as run.json
 * has it. A report takes a run.json with fields missing (one written by hand, or by an
 * older probe) and shows what is there.
 */
export const ReportedManifestSchema = RunManifestSchema.partial().required({ verb: true });
