/**
 * The task record (design.md): SWE-bench field names, JSON-encoded lists accepted as in
 * SWE-bench, plus `test_cmd`, `log_parser` and where the repository lives. A published
 * dataset row lacks those three; src/swebench/row-facts.ts derives them before this schema
 * reads the row, and every other field of the row is kept as it is.
 */
import { z } from 'zod';
import { MAX_TIMEOUT_S } from '../util/timeout.ts';
import { TaskEnvironment } from './environment.ts';

/**
 * A full commit id (SHA-1, or SHA-256 for a repository in that format). A name (`HEAD`, a
 * branch, a tag) or a short id means whatever the repository says when it is read: a
 * record must fix the tree it is graded against, and a name would let it point anywhere.
 */
export const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** SWE-bench stores FAIL_TO_PASS / PASS_TO_PASS as JSON-encoded strings; accept both. */
const TestList = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}, z.array(z.string()));

export const LOG_PARSERS = ['pytest', 'unittest', 'node-test', 'sympy', 'exit-code'] as const;
export const LogParserName = z.enum(LOG_PARSERS);
export type LogParserName = z.infer<typeof LogParserName>;

export const Task = z
  .looseObject({
    instance_id: z.string().min(1),
    problem_statement: z.string(),
    base_commit: z
      .string()
      .regex(COMMIT_ID, 'must be a full commit id (40 lowercase hex digits, or 64), not a name such as HEAD, a branch or a short id'),
    /** The gold patch, when known. */
    patch: z.string().optional(),
    test_patch: z.string().default(''),
    FAIL_TO_PASS: TestList,
    PASS_TO_PASS: TestList.default([]),
    /** Runs the tests inside the sandbox, from `workdir`. */
    test_cmd: z.string().min(1),
    log_parser: LogParserName,
    /** Docker image with the repository at `workdir` (SWE-bench images). */
    image: z.string().optional(),
    /**
     * A local git repository (or a plain tree, committed deterministically), relative to the
     * task file; it must resolve inside the task set's directory (src/verify/load-task.ts).
     */
    repo_path: z.string().optional(),
    workdir: z.string().default('/testbed'),
    /** Debian packages (and pip requirements Debian packages) the tests need beyond the base image. */
    environment: TaskEnvironment.optional(),
    /** Seconds one test run may take (at most MAX_TIMEOUT_S: a longer timer would fire at once). */
    test_timeout_s: z
      .number()
      .positive()
      .max(MAX_TIMEOUT_S, `must be at most ${MAX_TIMEOUT_S} s (one day): a longer timeout would fire at once`)
      .default(300),
    // What published rows carry besides (kept as they are; typed where code reads them; null where a dataset has no value).
    /** `owner/name` (SWE-smith: `swesmith/owner__name.commit`). */
    repo: z.string().nullish(),
    /** The harness's version key for the repository's environment and test command. */
    version: z.string().nullish(),
    environment_setup_commit: z.string().nullish(),
    hints_text: z.string().nullish(),
    /** SWE-smith: the image that holds the repository. */
    image_name: z.string().nullish(),
  })
  .refine((t) => t.image !== undefined || t.repo_path !== undefined, {
    message: 'a task needs "image" or "repo_path"',
    path: ['repo_path'],
  });
export type Task = z.infer<typeof Task>;

/** A task with `repo_path` resolved to an absolute path and the file it came from. */
export type LoadedTask = Task & {
  file: string;
  repoDir?: string;
  /** The real directories repoDir was confined to (the task set's, PROBE_REPO_ROOTS): its `.git` may lead only inside them. */
  repoRoots?: string[];
};

/** The environment just before some step: the base commit plus a cumulative patch. */
export interface EnvState {
  base_commit: string;
  patch: string;
}
