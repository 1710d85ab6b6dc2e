/**
 * The two files between `probe screen --slurm` and one of its Slurm jobs, in the job's run
 * directory: `job.json`, the checkpoint it is given (written by the screen before
 * submitting), and `result.json`, what the job's stage concluded for it — its result, or
 * the failure it recorded (written by the job when the stage ends). The job's stage is its
 * `--job-stage` flag and the folder it runs in (`jobs/<stage>/…`).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { BosRecord } from '../backends/bos.ts';
import { describeCause, InputError, type InputLocation, ProbeError } from '../errors.ts';
import type { Failure } from './checkpoint-loop.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { readJsonFile, readTextFile } from '../util/safe-tree.ts';

export interface StageJobInput {
  /** The `--ckpt` argument as the screen resolved it: the job resolves the same, so results carry the same name. */
  checkpoint: string;
}

export interface StageJobResult<R = unknown> {
  checkpoint: string;
  /** The stage's result for the checkpoint; null where it has none and no failure (an ASAP run with no instance left). */
  result: R | null;
  /** A failure the stage recorded (bad input, a server that broke): the checkpoint's failure, as in one process. */
  failure: { message: string; exit_code: 1 | 2; location?: InputLocation } | null;
  /** The ASAP stage: where its episodes are, and the instances they ran on. */
  asap?: { out: string; instances: number };
  /** How the job served the checkpoint (its run.json's record), for the screen's run.json: BOS as resolved, the engine. */
  serving?: { bos?: BosRecord; engine?: string };
}

export const JOB_INPUT_FILE = 'job.json';
export const JOB_RESULT_FILE = 'result.json';

export function writeStageJobInput(dir: string, input: StageJobInput): string {
  const file = join(dir, JOB_INPUT_FILE);
  writeFileAtomic(file, `${JSON.stringify(input)}\n`);
  return file;
}

/** A job's `--job FILE`; anything else is one line naming the file and field. */
export function readStageJobInput(file: string): StageJobInput {
  const doc = readJsonFile(file, { what: "a Slurm job's checkpoint" }) as Record<string, unknown> | null;
  if (typeof doc !== 'object' || doc === null || typeof doc.checkpoint !== 'string' || !doc.checkpoint)
    throw new InputError({ file, field: 'checkpoint' }, 'expected the checkpoint the job scores, a string');
  return { checkpoint: doc.checkpoint };
}

/**
 * A number JSON cannot hold (NaN, ±Infinity: an MCQ accuracy over no scoreable item) kept
 * as `{ "non_finite": "NaN" }`, so the screen decides from the very values the job had —
 * JSON's null would rank differently from NaN, and the ladder would no longer be one process's.
 */
const NON_FINITE = 'non_finite';
const keepNonFinite = (_key: string, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? { [NON_FINITE]: String(v) } : v);
const reviveNonFinite = (_key: string, v: unknown) =>
  typeof v === 'object' && v !== null && Object.keys(v).length === 1 && typeof (v as Record<string, unknown>)[NON_FINITE] === 'string'
    ? Number((v as Record<string, string>)[NON_FINITE])
    : v;

export function writeStageJobResult(dir: string, result: StageJobResult): void {
  writeFileAtomic(join(dir, JOB_RESULT_FILE), `${JSON.stringify(result, keepNonFinite, 2)}\n`);
}

/** What the job in `dir`, given `checkpoint`, concluded, or undefined where it has not written it (still running, or ended without it). */
export function readStageJobResult<R>(dir: string, checkpoint: string): StageJobResult<R> | undefined {
  const file = join(dir, JOB_RESULT_FILE);
  if (!existsSync(file)) return undefined;
  // Probe's own file, as large as a stage's results are (every item's samples): no cap below a gibibyte.
  const text = readTextFile(file, { what: "a Slurm job's result", maxBytes: 2 ** 30 });
  let doc: Record<string, unknown> | null;
  try {
    doc = JSON.parse(text, reviveNonFinite) as Record<string, unknown> | null;
  } catch (error) {
    throw new InputError({ file }, `not valid JSON: ${describeCause(error)}`, { cause: error });
  }
  const fail = (field: string, expected: string): never => {
    throw new InputError({ file, field }, `expected ${expected}`);
  };
  if (typeof doc !== 'object' || doc === null) return fail('checkpoint', 'a JSON object');
  // A result is credited to the checkpoint whose job directory it is in, and to no other.
  if (doc.checkpoint !== checkpoint) fail('checkpoint', `${JSON.stringify(checkpoint)}, the checkpoint this job was given`);
  if (!('result' in doc) || (doc.result !== null && typeof doc.result !== 'object')) fail('result', 'an object or null');
  const failure = doc.failure as Record<string, unknown> | null;
  if (
    failure !== null &&
    (typeof failure !== 'object' || typeof failure.message !== 'string' || ![1, 2].includes(failure.exit_code as number))
  )
    fail('failure', 'null or { message, exit_code: 1 | 2 }');
  const location = failure?.location as Record<string, unknown> | undefined;
  if (location !== undefined && (typeof location !== 'object' || location === null || typeof location.file !== 'string'))
    fail('failure.location', 'an object with the file the bad input came from');
  return doc as unknown as StageJobResult<R>;
}

/** A failure as a job records it: its message and exit code, and where it was bad input, the file and field it names. */
export function failureRecord(failure: Failure): NonNullable<StageJobResult['failure']> {
  return {
    message: failure.message,
    exit_code: failure.exitCode,
    ...(failure instanceof InputError ? { location: failure.location } : {}),
  };
}

/** The failure a job recorded, as the screen reports it: bad input stays bad input, naming its file and field, as in one process. */
export function failureOf(record: NonNullable<StageJobResult['failure']>): Failure {
  if (!record.location) return new ProbeError(record.message, { exitCode: record.exit_code });
  const error = new InputError(record.location, '');
  error.message = record.message; // the job's own words, which already name the file and field
  return error;
}
