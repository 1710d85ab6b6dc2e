/**
 * An environment's episodes over checkpoints, as `probe asap --env terminal|research` and
 * the screening ladder's environment stages run them: the run directory opened (a rerun
 * with --resume continues it episode by episode), whatever the environment prepares before
 * any model work, every checkpoint's episodes with one backend open at a time, and every
 * finished episode's transcript written beside its record. The caller writes results.json
 * with what its environment adds.
 */
import { join, resolve } from 'node:path';
import type { BosPolicy } from '../backends/bos.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { CompletionBackend } from '../backends/types.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import type { ItemHooks } from '../probes/memo.ts';
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

/** What an environment gives the run: its settings, its instances, and how one checkpoint's episodes run. */
export interface EpisodeRunPlan<Rec, Res> {
  /** The environment's kind: its samples log, progress label and default run directory. */
  kind: 'terminal' | 'research';
  /** What defines the episodes (a rerun must match it to resume; checkpoints may be added), before the serving settings. */
  config: Record<string, unknown>;
  /** Where the instances came from, and the instances (ids, or ids with their files' hash). */
  probeSet: { path: string; instances: Parameters<typeof probeSetRecord>[1] };
  /** Episodes per checkpoint (progress units). */
  episodes: number;
  /** The run's first line, after "Writing"/"Resuming": `the terminal run in DIR (…)`. */
  describe: (out: string) => string;
  /** What must hold before the run says anything (an engine that answers). */
  check?: () => Promise<void>;
  /** Work before any model work (images, prefixes), with the run directory open. */
  prepare?: (dir: RunDir) => Promise<void>;
  run: (checkpoint: string, backend: CompletionBackend, hooks: ItemHooks<Rec>) => Promise<Res>;
  /** A finished episode's transcript: its instance, run and text (undefined where the record's instance is not in this run). */
  transcript: (record: Rec) => { instance: string; run: number; text: string } | undefined;
}

export interface EpisodeRun<Res> {
  /** The run directory as given (`--out`) or chosen from the settings. */
  out: string;
  dir: RunDir;
  /** The settings as recorded (the plan's, then how checkpoints are served). */
  config: Record<string, unknown>;
  results: Res[];
  failures: Failure[];
}

export async function runEpisodesOverCheckpoints<Rec, Res>(
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
