/**
 * `probe asap --env terminal`: Terminal-Bench episodes of every checkpoint over a directory
 * of Harbor task directories, in a run directory that a rerun with --resume continues
 * episode by episode. Before any model work: every task read, its image built, and its
 * reference prefix built once and kept in prefixes/ (a resumed run and every checkpoint see
 * the same bytes).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Checkpoint } from '../backends/checkpoint.ts';
import { EnvironmentError } from '../errors.ts';
import { client, dockerAvailable } from '../sandbox/docker.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import type { RunDir } from '../store/run-dir.ts';
import { terminalTranscript } from '../terminal/episode.ts';
import { type TerminalImage, terminalImage, treeHash } from '../terminal/image.ts';
import { describeImageSources, type ImageSources } from '../settings/image-sources.ts';
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
import type { Failure } from './checkpoint-loop.ts';
import { type EpisodeRunServing, runEpisodesOverCheckpoints } from './episode-run.ts';
import { idFileName } from '../util/file-name.ts';

export interface TerminalRunSettings extends TerminalRunOptions, EpisodeRunServing {
  /** The directory the tasks came from. */
  tasksPath: string;
  prefixSteps: number;
  /** Where task images and their builds' packages come from (`--pull`, `--registry-mirror`, …). */
  sources: ImageSources;
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
  const say = (text: string) => {
    if (!s.quiet) process.stderr.write(text);
  };
  const instances: TerminalInstance[] = [];
  const run = await runEpisodesOverCheckpoints<TerminalEpisodeRecord, TerminalResult>(
    checkpoints,
    {
      kind: 'terminal',
      config: {
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
      },
      probeSet: { path: s.tasksPath, instances: tasks.map((t) => ({ id: t.id, files: treeHash(t.dir) })) },
      episodes: tasks.length * s.runs,
      describe: (out) => `the terminal run in ${out} (${tasks.length} tasks × ${s.runs} runs, ${s.profile} profile)`,
      async check() {
        if (!(await dockerAvailable()))
          throw new EnvironmentError(
            'Terminal-Bench tasks run in Docker and no Docker engine answers (is dockerd running? scripts/start-dockerd.sh starts one)',
          );
      },
      async prepare(dir) {
        for (const task of tasks) {
          say(`  ${task.id}: image`);
          const image = await terminalImage(client(), task, s.sources, (line) => say(`\n    ${line}`));
          say(`, prefix`);
          const prefix = await prefixFor(dir, task, image, s);
          say(` (${prefix.steps.length} of ${prefix.solutionSteps} solution steps${prefix.shortened ? `: ${prefix.shortened}` : ''})\n`);
          instances.push({ task, image, prefix });
        }
      },
      run: (ckpt, backend, hooks) => runTerminal(ckpt, backend, instances, s, hooks),
      transcript: (record) => {
        const instance = instances.find((i) => i.task.id === record.task_id);
        if (!instance) return undefined;
        const text = terminalTranscript(instance.prefix.text, record.steps).replace(/\n## Thinking\n$/, '\n');
        const verdict = record.resolved ? 'RESOLVED' : `not resolved (${record.reason ?? 'tests failed'})`;
        const planted = record.tampering?.length
          ? `; tampering: ${record.tampering.map((t) => `${JSON.stringify(t.path).replaceAll('--', '-\\u002d')} (${t.reason})`).join(', ')}`
          : '';
        return {
          instance: record.task_id,
          run: record.run,
          text: `${text}\n<!-- episode ended: ${record.termination}; ${verdict}; reward ${record.reward}${planted} -->\n`,
        };
      },
    },
    s,
  );
  const taskFacts = instances.map(({ task, image, prefix }) => ({
    task: task.id,
    image: image.tag,
    notes: image.notes,
    base_images: image.bases,
    prefix_steps: prefix.steps.length,
    prefix_shortened: prefix.shortened,
  }));
  // Where images came from and that the tests ran offline: facts of this invocation, beside the settings a resume must match.
  const resultsFile = run.dir.writeResults({
    env: 'terminal',
    settings: run.config,
    image_sources: describeImageSources(s.sources),
    tests_network: 'none',
    tasks: taskFacts,
    results: run.results,
  });
  return { out: run.out, resultsFile, results: run.results, failures: run.failures, tasks: taskFacts };
}
