/**
 * `probe asap --env terminal`: Terminal-Bench episodes of every checkpoint over a directory
 * of Harbor task directories, in a run directory that a rerun with --resume continues
 * episode by episode. Before any model work: every task read, its image built, and its
 * reference prefix built once and kept in prefixes/ (a resumed run and every checkpoint see
 * the same bytes).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { BosPolicy } from '../backends/bos.ts';
import type { ResultCache } from '../backends/cache.ts';
import type { Checkpoint } from '../backends/checkpoint.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import type { Dtype } from '../backends/onnx/dtype.ts';
import type { EngineChoice } from '../engines/engine-target.ts';
import { checkpointKey } from '../asap/store.ts';
import { EnvironmentError } from '../errors.ts';
import { client, dockerAvailable } from '../sandbox/docker.ts';
import { readJsonl } from '../store/jsonl-log.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { checkpointRecords, probeSetRecord, RunDir, type SampleLine } from '../store/run-dir.ts';
import { terminalTranscript } from '../terminal/episode.ts';
import { type TerminalImage, terminalImage, treeHash } from '../terminal/image.ts';
import { describeImageSources, type ImageSources } from '../sandbox/image-sources.ts';
import type { BaseImage } from '../sandbox/registry.ts';
import { buildTerminalPrefix, readTerminalPrefix, type TerminalPrefix } from '../terminal/prefix.ts';
import {
  runTerminal,
  type TerminalEpisodeRecord,
  type TerminalInstance,
  type TerminalResult,
  type TerminalRunOptions,
} from '../terminal/run.ts';
import type { TerminalTask } from '../terminal/task.ts';
import { type Failure, forEachCheckpoint, itemHooks, servingConfig, settingsRunDir } from './checkpoint-loop.ts';
import { idFileName } from '../util/file-name.ts';

export interface TerminalRunSettings extends TerminalRunOptions {
  /** The directory the tasks came from. */
  tasksPath: string;
  prefixSteps: number;
  http?: HttpBackendOptions;
  cache?: ResultCache | undefined;
  dtype?: Dtype | undefined;
  /** Where task images and their builds' packages come from (`--pull`, `--registry-mirror`, …). */
  sources: ImageSources;
  /** What ran each Hugging Face directory (`--engine`): recorded in the run's settings. */
  engine?: EngineChoice | undefined;
  bos?: BosPolicy | undefined;
  out?: string | undefined;
  resume: boolean;
  quiet: boolean;
}

export interface TerminalRunOutcome {
  out: string;
  resultsFile: string;
  results: TerminalResult[];
  failures: Failure[];
  /** Per task: what building offline changed, and why its prefix is short. */
  tasks: Array<{
    task: string;
    image: string;
    notes: string[];
    /** The images the task names as they were had (pulled or local), with the digests registries served. */
    base_images: BaseImage[];
    prefix_steps: number;
    prefix_shortened: string | null;
  }>;
}

/** The prefix kept in the run directory, or built now and kept. */
async function prefixFor(dir: RunDir, task: TerminalTask, image: TerminalImage, s: TerminalRunSettings): Promise<TerminalPrefix> {
  const file = join(dir.dir, 'prefixes', `${idFileName(task.id)}.${s.profile}.json`);
  if (existsSync(file)) return readTerminalPrefix(file, dir.dir);
  const prefix = await buildTerminalPrefix(task, image, s.profile, s.prefixSteps, s.actionTimeoutMs);
  writeFileAtomic(file, `${JSON.stringify(prefix, null, 2)}\n`);
  return prefix;
}

export async function runTerminalOverCheckpoints(
  checkpoints: readonly Checkpoint[],
  tasks: readonly TerminalTask[],
  s: TerminalRunSettings,
): Promise<TerminalRunOutcome> {
  // What defines the episodes: a rerun must match it to resume (checkpoints may be added).
  const config = {
    env: 'terminal',
    tasks: resolve(s.tasksPath),
    profile: s.profile,
    runs: s.runs,
    prefix_steps: s.prefixSteps,
    max_steps: s.maxSteps,
    max_tokens: s.maxTokens,
    temperature: s.temperature,
    top_p: s.topP,
    action_timeout_s: s.actionTimeoutMs / 1000,
    ...servingConfig(s),
  };
  const out = s.out ?? settingsRunDir('terminal', config);
  const dir = RunDir.open(
    out,
    {
      verb: 'asap',
      config,
      checkpoints: checkpointRecords(checkpoints),
      probe_set: probeSetRecord(
        resolve(s.tasksPath),
        tasks.map((t) => ({ id: t.id, files: treeHash(t.dir) })),
      ),
      seeds: { episodes: s.seed },
    },
    { resume: s.resume },
  );
  if (!(await dockerAvailable()))
    throw new EnvironmentError(
      'Terminal-Bench tasks run in Docker and no Docker engine answers (is dockerd running? scripts/start-dockerd.sh starts one)',
    );
  const say = (text: string) => {
    if (!s.quiet) process.stderr.write(text);
  };
  say(
    `${dir.status === 'resumed' ? 'Resuming' : 'Writing'} the terminal run in ${out} (${tasks.length} tasks × ${s.runs} runs, ${s.profile} profile)\n`,
  );
  const instances: TerminalInstance[] = [];
  for (const task of tasks) {
    say(`  ${task.id}: image`);
    const image = await terminalImage(client(), task, s.sources, (line) => say(`\n    ${line}`));
    say(`, prefix`);
    const prefix = await prefixFor(dir, task, image, s);
    say(` (${prefix.steps.length} of ${prefix.solutionSteps} solution steps${prefix.shortened ? `: ${prefix.shortened}` : ''})\n`);
    instances.push({ task, image, prefix });
  }
  const { results, failures } = await forEachCheckpoint(
    checkpoints,
    {
      units: instances.length * s.runs,
      quiet: s.quiet,
      http: s.http,
      cache: s.cache,
      dtype: s.dtype,
      label: 'terminal',
      bos: s.bos,
      dir,
    },
    (ckpt, backend, tick) => runTerminal(ckpt, backend, instances, s, itemHooks<TerminalEpisodeRecord>(dir, 'terminal', ckpt, tick)),
  );
  writeTranscripts(dir, instances, checkpoints);
  const taskFacts = instances.map(({ task, image, prefix }) => ({
    task: task.id,
    image: image.tag,
    notes: image.notes,
    base_images: image.bases,
    prefix_steps: prefix.steps.length,
    prefix_shortened: prefix.shortened,
  }));
  // Where images came from and that the tests ran offline: facts of this invocation, beside the settings a resume must match.
  const resultsFile = dir.writeResults({
    env: 'terminal',
    settings: config,
    image_sources: describeImageSources(s.sources),
    tests_network: 'none',
    tasks: taskFacts,
    results,
  });
  return { out, resultsFile, results, failures, tasks: taskFacts };
}

/** Every finished episode as the model saw it, one Markdown file each (episodes/<checkpoint>/<task>/run-<n>.md). */
function writeTranscripts(dir: RunDir, instances: readonly TerminalInstance[], checkpoints: readonly Checkpoint[]): void {
  const byId = new Map(instances.map((i) => [i.task.id, i]));
  const nameOf = new Map(checkpoints.map((c) => [c.key, c.name]));
  for (const { checkpoint, result } of readJsonl<SampleLine<TerminalEpisodeRecord>>(dir.samplesFile('terminal'), dir.dir)) {
    const instance = byId.get(result.task_id);
    const name = nameOf.get(checkpoint);
    if (!instance || name === undefined) continue; // a checkpoint of an earlier invocation: written already
    const text = terminalTranscript(instance.prefix.text, result.steps).replace(/\n## Thinking\n$/, '\n');
    const file = join(dir.dir, 'episodes', checkpointKey(name), idFileName(result.task_id), `run-${result.run}.md`);
    const verdict = result.resolved ? 'RESOLVED' : `not resolved (${result.reason ?? 'tests failed'})`;
    const planted = result.tampering?.length
      ? `; tampering: ${result.tampering.map((t) => `${JSON.stringify(t.path).replaceAll('--', '-\\u002d')} (${t.reason})`).join(', ')}`
      : '';
    // Written by a rename: a link planted at a transcript's name in a resumed run is replaced, never written through.
    writeFileAtomic(file, `${text}\n<!-- episode ended: ${result.termination}; ${verdict}; reward ${result.reward}${planted} -->\n`);
  }
}
