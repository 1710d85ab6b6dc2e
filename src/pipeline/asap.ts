/**
 * An ASAP run over checkpoints as the CLI does it (`probe asap`, and `probe screen` for its
 * shortlist): settings recorded in the run directory (a rerun resumes), prefixes built and
 * leak-checked before any model work, one backend open at a time.
 */
import { resolve } from 'node:path';
import { asapFormat, type AsapFormatName } from '../formats/asap-transcripts.ts';
import { prepareInstances } from '../swe/prepare.ts';
import type { ToolProfile } from '../swe/profiles.ts';
import { type AsapResult, runAsap } from '../swe/run.ts';
import { AsapStore } from '../swe/store.ts';
import type { InputError } from '../errors.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import { checkpointRecords, probeSetRecord, RunDir } from '../store/run-dir.ts';
import type { EndpointFailure } from '../backends/http/transport.ts';
import type { LoadedTask } from '../schema/task.ts';
import { openSandbox } from '../sandbox/open.ts';
import type { SandboxKind } from '../settings/sandbox-kinds.ts';
import { client } from '../sandbox/docker.ts';
import { DEFAULT_IMAGE_SOURCES, describeImageSources, type ImageSources } from '../settings/image-sources.ts';
import { imageRecords } from '../sandbox/registry.ts';
import { TaskPools } from '../sandbox/pool.ts';
import { forEachCheckpoint, servingConfig, settingsRunDir } from './checkpoint-loop.ts';
import type { BosPolicy } from '../backends/bos.ts';
import { ASAP_PROTOCOL, passAtKs } from '../protocol.ts';
import type { EpisodeProtocol } from '../asap/episodes.ts';

export interface AsapRunSettings extends EpisodeProtocol {
  /** For checkpoints behind servers. */
  http?: HttpBackendOptions;
  /** `--bos`: whether a BOS token goes before every prompt. */
  bos?: BosPolicy | undefined;
  /** Cache of seeded model calls. */
  cache?: ResultCache | undefined;
  /** Which graph of each checkpoint directory runs (`--dtype`). */
  dtype?: Dtype | undefined;
  /** What ran each Hugging Face directory (`--engine`): recorded in the run's settings. */
  engine?: EngineChoice | undefined;
  tasksPath: string;
  reference: string;
  profile: ToolProfile;
  format: AsapFormatName;
  prefixSteps: number;
  actionTimeoutS: number;
  sandbox: SandboxKind;
  /** Where a task's image comes from when the engine lacks it (docker sandbox; default: pull what is missing). */
  sources?: ImageSources;
  out?: string;
  /**
   * Continue the run in `out` (required when it holds one). Absent when the ASAP run is a
   * part of a larger run directory (`probe screen`) that does the checking.
   */
  resume?: boolean;
  quiet: boolean;
}

/** What a run of the ASAP protocol leaves to its caller. */
export type AsapProtocolChoices = Pick<
  AsapRunSettings,
  | 'tasksPath'
  | 'reference'
  | 'runs'
  | 'concurrency'
  | 'profile'
  | 'maxSteps'
  | 'maxTokens'
  | 'seed'
  | 'out'
  | 'quiet'
  | 'http'
  | 'cache'
  | 'dtype'
  | 'engine'
  | 'bos'
>;

/** An ASAP run's defaults: the protocol's (protocol.ts), then the harness's own (bash tools, 2 episodes at once, the local sandbox, seed 0). */
export const ASAP_RUN_DEFAULTS = {
  ...ASAP_PROTOCOL,
  profile: 'bash',
  concurrency: 2,
  sandbox: 'local',
  seed: 0,
} as const satisfies Partial<AsapRunSettings>;

/**
 * The ASAP protocol as `probe screen` and `probe validate` run it: the caller's choices, and
 * the protocol's own settings (md+xml, the reference prefix, sampling, the action timeout,
 * the local sandbox) from `ASAP_RUN_DEFAULTS`.
 */
export function asapProtocolSettings(choices: AsapProtocolChoices): AsapRunSettings {
  const { format, prefixSteps, temperature, topP, actionTimeoutS, sandbox } = ASAP_RUN_DEFAULTS;
  return { ...choices, format, prefixSteps, temperature, topP, actionTimeoutS, sandbox };
}

export interface AsapRunOutcome {
  out: string;
  resultsFile: string;
  instances: number;
  excluded: Array<{ instance: string; reason: string }>;
  results: AsapResult[];
  failures: Array<InputError | EndpointFailure>;
}

export async function runAsapOverCheckpoints(
  checkpoints: readonly Checkpoint[],
  tasks: LoadedTask[],
  s: AsapRunSettings,
): Promise<AsapRunOutcome> {
  const format = asapFormat(s.format);
  // What defines the episodes: a rerun must match it to resume (runs and checkpoints may grow).
  const protocol = {
    tasks: resolve(s.tasksPath),
    reference: resolve(s.reference),
    instances: tasks.map((t) => t.instance_id),
    profile: s.profile,
    format: s.format,
    prefix_steps: s.prefixSteps,
    max_steps: s.maxSteps,
    max_tokens: s.maxTokens,
    temperature: s.temperature,
    top_p: s.topP,
    seed: s.seed,
    action_timeout_s: s.actionTimeoutS,
    sandbox: s.sandbox,
    ...servingConfig(s),
  };
  const out = s.out ?? settingsRunDir('asap', protocol);
  const dir =
    s.resume === undefined
      ? undefined
      : RunDir.open(
          out,
          {
            verb: 'asap',
            config: protocol,
            checkpoints: checkpointRecords(checkpoints),
            probe_set: probeSetRecord(
              resolve(s.tasksPath),
              tasks.map((t) => t.instance_id),
            ),
            seeds: { episodes: s.seed },
          },
          { resume: s.resume },
        );
  const store = new AsapStore(out);
  const sources = s.sources ?? DEFAULT_IMAGE_SOURCES;
  const pools = new TaskPools((t) => openSandbox(s.sandbox, t, { imageSources: sources }), s.concurrency);
  try {
    const claimed = store.claim(protocol);
    const { instances, excluded } = await prepareInstances(
      tasks,
      s.reference,
      { steps: s.prefixSteps, profile: s.profile, format },
      store,
      pools.leaseFor,
    );
    for (const e of excluded) process.stderr.write(`probe: excluded ${e.instance}: ${e.reason}\n`);
    if (!s.quiet)
      process.stderr.write(
        `${claimed === 'resumed' ? 'Resuming' : 'Writing'} the ASAP run in ${out} (${instances.length} instances × ${s.runs} runs)\n`,
      );
    const { results, failures } = await forEachCheckpoint(
      checkpoints,
      { units: instances.length * s.runs, quiet: s.quiet, http: s.http, cache: s.cache, dtype: s.dtype, label: 'asap', bos: s.bos, dir },
      (ckpt, backend, tick) =>
        runAsap(ckpt, backend, instances, {
          runs: s.runs,
          concurrency: s.concurrency,
          seed: s.seed,
          ks: passAtKs(s.runs),
          store,
          leaseFor: pools.leaseFor,
          gradersFor: pools.gradersFor,
          onEpisode: tick,
          settings: {
            format,
            profile: s.profile,
            maxSteps: s.maxSteps,
            maxTokens: s.maxTokens,
            temperature: s.temperature,
            topP: s.topP,
            actionTimeoutMs: s.actionTimeoutS * 1000,
          },
        }),
    );
    // Which bytes the episodes ran on: every task image as this engine holds it (the digest its registry served).
    const images =
      s.sandbox === 'docker' ? await imageRecords(client(), [...new Set(tasks.flatMap((t) => (t.image ? [t.image] : [])))]) : [];
    const resultsFile = store.writeResults({
      settings: protocol,
      runs: s.runs,
      ...(images.length ? { images, image_sources: describeImageSources(sources) } : {}),
      excluded,
      results,
    });
    return { out, resultsFile, instances: instances.length, excluded, results, failures };
  } finally {
    await pools.close();
  }
}
