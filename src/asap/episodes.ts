/**
 * The episodes of one checkpoint over an environment's instances, for every environment:
 * `runs` episodes per instance, run concurrently against one shared backend, each with a
 * seed derived from the run's seed, the instance and the run index (the same for every
 * checkpoint, so checkpoints face the same draws). A finished episode is read back from the
 * memo and never run again. Pass@k is unbiased; Intersection@n counts instances solved in
 * all n runs.
 */
import { samplerRecord } from '../backends/sampler-record.ts';
import type { CompletionBackend, SampleRequest } from '../backends/types.ts';
import type { ItemHooks } from '../probes/memo.ts';
import type { LoopSettings } from './loop.ts';
import { memoized } from '../probes/memo.ts';
import { passAtKs } from '../protocol.ts';
import { meanPassAtK } from '../stats/pass-at-k.ts';
import { mapLimit } from '../util/pool.ts';
import { deriveSeed } from '../util/rng.ts';

/** The episode's seed: the same for every checkpoint. */
export function episodeSeed(seed: number, instance: string, run: number): number {
  return deriveSeed(seed, instance, run);
}

/** How many episodes per instance, how many at once, and the seed they derive theirs from. */
export interface EpisodeRunOptions {
  runs: number;
  /** Episodes at once (the backend's concurrency, or the containers the machine holds, is the useful bound). */
  concurrency: number;
  seed: number;
}

/** The settings of every environment's episodes: how many, how many at once, the seed, and how each step is drawn. */
export interface EpisodeProtocol extends EpisodeRunOptions, Omit<LoopSettings, 'label' | 'seed'> {}

export interface EpisodeJob<I> {
  instance: I;
  /** The instance's id. */
  id: string;
  run: number;
  seed: number;
}

/**
 * Runs (or reads back) every instance's `runs` episodes, at most `concurrency` at once; the
 * records come back in job order (instance by instance, run by run). A memo's id is
 * `<instance>#<run>`.
 */
export async function runEpisodes<I, R>(
  instances: readonly I[],
  options: EpisodeRunOptions & { idOf: (instance: I) => string },
  runOne: (job: EpisodeJob<I>) => Promise<R>,
  hooks: ItemHooks<R> = {},
): Promise<R[]> {
  const jobs = instances.flatMap((instance) =>
    Array.from({ length: options.runs }, (_, run): EpisodeJob<I> => {
      const id = options.idOf(instance);
      return { instance, id, run, seed: episodeSeed(options.seed, id, run) };
    }),
  );
  return mapLimit(jobs, options.concurrency, async (job) => {
    const memoId = `${job.id}#${job.run}`;
    const record = await memoized(hooks.memo, memoId, () => runOne(job));
    hooks.onItem?.(memoId);
    return record;
  });
}

/** What an environment gives the one run of a checkpoint over its instances. */
export interface CheckpointEpisodes<I, R, S> {
  idOf(instance: I): string;
  runOne(job: EpisodeJob<I>): Promise<R>;
  /** The result of the checkpoint from its records, in job order. */
  summarize(records: readonly R[]): S;
}

/**
 * Runs (or reads back) a checkpoint's episodes over the instances and summarizes them, the
 * distribution the backend drew the steps from after the summary.
 */
export async function runCheckpointEpisodes<I, R, S>(
  backend: CompletionBackend,
  instances: readonly I[],
  options: EpisodeRunOptions & Pick<SampleRequest, 'temperature' | 'topP'>,
  environment: CheckpointEpisodes<I, R, S>,
  hooks: ItemHooks<R> = {},
): Promise<S & { sampler?: Record<string, unknown> }> {
  const records = await runEpisodes(instances, { ...options, idOf: environment.idOf }, environment.runOne, hooks);
  return { ...environment.summarize(records), ...(await samplerRecord(backend, options)) };
}

/** What every environment's result for one checkpoint holds, whatever it adds (its instances' count, behaviour, items). */
export interface EpisodesResult<T extends string> {
  checkpoint: string;
  backend: string;
  /** The distribution the episodes' steps were drawn from, as the backend ran it (absent in older runs). */
  sampler?: Record<string, unknown>;
  runs: number;
  pass_at: Record<string, number>;
  /** Share of instances solved in all n runs (Intersection@n). */
  intersection: number;
  terminations: Record<T, number>;
}

/** Solved counts of one instance: n episodes, c of them solved. */
export interface SolvedCount {
  n: number;
  c: number;
}

/** Pass@k for every k the protocol reports at `runs`, and the instances solved in every run. */
export function passSummary(items: SolvedCount[], runs: number): { pass_at: Record<string, number>; solvedAlways: number } {
  return {
    pass_at: Object.fromEntries(passAtKs(runs).map((k) => [String(k), meanPassAtK(items, k)])),
    solvedAlways: items.filter((i) => i.n > 0 && i.c === i.n).length,
  };
}

/** How many episodes ended each way, every termination the environment declares counted (0 where none did). */
export function countTerminations<T extends string>(
  terminations: readonly T[],
  ended: ReadonlyArray<{ termination: T }>,
): Record<T, number> {
  return Object.fromEntries(terminations.map((t) => [t, ended.filter((e) => e.termination === t).length])) as Record<T, number>;
}

/** The mean of a record's number over the records (0 where there are none). */
export function meanOver<R>(records: readonly R[], value: (record: R) => number): number {
  return records.length ? records.reduce((sum, r) => sum + value(r), 0) / records.length : 0;
}
