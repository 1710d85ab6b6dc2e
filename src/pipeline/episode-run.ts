/**
 * A registered environment's episodes over checkpoints, as `probe asap --env NAME` and the
 * screening ladder's `--asap-env NAME` run them (the environment's plan:
 * asap/episode-plan.ts): the run directory opened (a rerun with --resume continues it
 * episode by episode), whatever the environment prepares before any model work, every
 * checkpoint's episodes with one backend open at a time, every finished episode's
 * transcript written beside its record, and results.json.
 */
import { join, resolve } from 'node:path';
import type { BosPolicy } from '../backends/bos.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import type { EnvironmentPlan, EpisodeRunPlan } from '../asap/episode-plan.ts';
import { checkpointRecords, probeSetRecord, RunDir } from '../store/run-dir.ts';
import { checkpointKey } from '../swe/store.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { idFileName } from '../util/file-name.ts';
import { type Failure, forEachCheckpoint, itemHooks, servingConfig, settingsRunDir } from './checkpoint-loop.ts';

/** How an episode run's checkpoints are served and where it is kept: the same for every environment. */
export interface EpisodeRunServing {
  http?: HttpBackendOptions;
  cache?: ResultCache | undefined;
  dtype?: Dtype | undefined;
  /** What ran each Hugging Face directory (`--engine`): recorded in the run's settings. */
  engine?: EngineChoice | undefined;
  bos?: BosPolicy | undefined;
  out?: string | undefined;
  resume: boolean;
  quiet: boolean;
  seed: number;
}

/** What a finished environment run gives its caller. */
export interface EnvironmentRunOutcome<Res> {
  out: string;
  resultsFile: string;
  results: Res[];
  failures: Failure[];
  /** What the run learned besides the results (the plan's facts: per-task image facts). */
  facts: Record<string, unknown>;
}

/** The plan's episodes over `checkpoints`, then results.json: the environment, the settings, what it records and learned, the results. */
export async function runEnvironmentEpisodes<Res>(
  checkpoints: readonly Checkpoint[],
  plan: EnvironmentPlan<unknown, Res>,
  s: EpisodeRunServing,
): Promise<EnvironmentRunOutcome<Res>> {
  const run = await runEpisodesOverCheckpoints(checkpoints, plan, s);
  const facts = plan.facts?.() ?? {};
  const resultsFile = run.dir.writeResults({ env: plan.kind, settings: run.config, ...plan.recorded?.(), ...facts, results: run.results });
  return { out: run.out, resultsFile, results: run.results, failures: run.failures, facts };
}

interface EpisodeRun<Res> {
  /** The run directory as given (`--out`) or chosen from the settings. */
  out: string;
  dir: RunDir;
  /** The settings as recorded (the plan's, then how checkpoints are served). */
  config: Record<string, unknown>;
  results: Res[];
  failures: Failure[];
}

async function runEpisodesOverCheckpoints<Rec, Res>(
  checkpoints: readonly Checkpoint[],
  plan: EpisodeRunPlan<Rec, Res>,
  s: EpisodeRunServing,
): Promise<EpisodeRun<Res>> {
  const config = { ...plan.config, ...servingConfig(s) };
  const out = s.out ?? settingsRunDir(plan.kind, config);
  const dir = RunDir.open(
    out,
    {
      verb: 'asap',
      config,
      checkpoints: checkpointRecords(checkpoints),
      probe_set: probeSetRecord(resolve(plan.probeSet.path), plan.probeSet.instances),
      seeds: { episodes: s.seed },
    },
    { resume: s.resume },
  );
  dir.declareSamples(plan.kind, plan.recordSchema);
  await plan.check?.();
  if (!s.quiet) process.stderr.write(`${dir.status === 'resumed' ? 'Resuming' : 'Writing'} ${plan.describe(out)}\n`);
  await plan.prepare?.(dir);
  const { results, failures } = await forEachCheckpoint(
    checkpoints,
    { units: plan.episodes, quiet: s.quiet, http: s.http, cache: s.cache, dtype: s.dtype, label: plan.kind, bos: s.bos, dir },
    (ckpt, backend, tick) => plan.run(ckpt, backend, itemHooks<Rec>(dir, plan.kind, ckpt, tick)),
  );
  writeTranscripts(dir, plan, checkpoints);
  return { out, dir, config, results, failures };
}

/** Every finished episode as the model saw it, one Markdown file each (episodes/<checkpoint>/<instance>/run-<n>.md). */
function writeTranscripts<Rec>(dir: RunDir, plan: EpisodeRunPlan<Rec, unknown>, checkpoints: readonly Checkpoint[]): void {
  const nameOf = new Map(checkpoints.map((c) => [c.key, c.name]));
  for (const { checkpoint, result } of dir.samples<Rec>(plan.kind)) {
    const name = nameOf.get(checkpoint);
    const shown = plan.transcript(result);
    if (!shown || name === undefined) continue; // a checkpoint of an earlier invocation of the run: its transcripts are written already
    // Laid out as SWE episodes are (swe/store.ts): the checkpoint as given, the instance, the run.
    const file = join(dir.dir, 'episodes', checkpointKey(name), idFileName(shown.instance), `run-${shown.run}.md`);
    // Written by a rename: a link planted at a transcript's name in a resumed run is replaced, never written through.
    writeFileAtomic(file, shown.text);
  }
}
