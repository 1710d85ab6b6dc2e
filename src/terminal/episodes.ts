/**
 * Terminal-Bench episodes as `probe asap --env terminal` and the ladder's `--asap-env
 * terminal` run them (asap/episode-plan.ts): Harbor task directories read and checked
 * before any work; then, with the run directory open, every task's image built and its
 * reference prefix built once and kept in prefixes/ (a resumed run and every checkpoint
 * see the same bytes).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type EnvironmentEpisodes,
  type EnvironmentOption,
  type EnvironmentPlan,
  episodeProtocolOf,
  optionValue,
} from '../asap/episode-plan.ts';
import { EMBEDDED_TERMINAL_TASKS } from '../embedded.ts';
import { EnvironmentError, InputError } from '../errors.ts';
import { TerminalEpisodeRecordSchema } from '../schema/episode-records.ts';
import { client, dockerAvailable } from '../sandbox/docker.ts';
import { describeImageSources } from '../settings/image-sources.ts';
import type { RunDir } from '../store/run-dir.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { idFileName } from '../util/file-name.ts';
import { TERMINAL_PROFILES, type TerminalProfile } from './actions.ts';
import { terminalTranscript } from './episode.ts';
import { type TerminalImage, terminalImage, treeHash } from './image.ts';
import { imageOriginLines, type TaskImageOrigin } from './image-origins.ts';
import { buildTerminalPrefix, readTerminalPrefix, type TerminalPrefix } from './prefix.ts';
import { runTerminal, type TerminalEpisodeRecord, type TerminalInstance, type TerminalResult, type TerminalRunOptions } from './run.ts';
import { loadTerminalTasks, type TerminalTask } from './task.ts';

const TASKS: EnvironmentOption = {
  flags: '--terminal-tasks <dir>',
  help: 'Terminal-Bench 2.x task directories (task.toml, instruction.md, environment/, tests/, solution/), or one of them',
  default: EMBEDDED_TERMINAL_TASKS,
  ladderRecord: 'terminal_tasks',
};

/** `--profile` here: terminus (the default: keystrokes to one tmux shell) or bash. */
function terminalProfile(given: string | undefined): TerminalProfile {
  if (given === undefined) return TERMINAL_PROFILES[0];
  if (!(TERMINAL_PROFILES as readonly string[]).includes(given))
    throw new InputError({ file: '--profile' }, `with --env terminal the profile is terminus or bash, not ${given}`);
  return given as TerminalProfile;
}

/** The prefix kept in the run directory, or built now and kept. */
async function prefixFor(dir: RunDir, task: TerminalTask, image: TerminalImage, options: TerminalRunOptions, prefixSteps: number) {
  const file = join(dir.dir, 'prefixes', `${idFileName(task.id)}.${options.profile}.json`);
  if (existsSync(file)) return readTerminalPrefix(file, dir.dir);
  const prefix: TerminalPrefix = await buildTerminalPrefix(task, image, options.profile, prefixSteps, options.actionTimeoutMs);
  writeFileAtomic(file, `${JSON.stringify(prefix, null, 2)}\n`);
  return prefix;
}

export const TERMINAL_EPISODES: EnvironmentEpisodes = {
  options: [TASKS],
  profiles: TERMINAL_PROFILES,
  transcriptsOf: (item) => ({
    instance: String(item.task_id),
    runs: Number(item.n),
    summary: `${item.c}/${item.n} resolved`,
    runLabel: (run) => `reward ${String((item.rewards as unknown[] | undefined)?.[run] ?? '–')}`,
  }),
  plan(s): EnvironmentPlan<TerminalEpisodeRecord, TerminalResult> {
    // All input is checked before any work.
    const profile = terminalProfile(s.profile);
    const tasksPath = optionValue<string>(s.options, TASKS);
    let tasks = loadTerminalTasks(tasksPath);
    if (s.instances) {
      const known = new Set(tasks.map((t) => t.id));
      const missing = s.instances.filter((i) => !known.has(i));
      if (missing.length) throw new InputError({ file: tasksPath, field: '--instances' }, `no task directory ${missing.join(', ')}`);
      tasks = tasks.filter((t) => s.instances!.includes(t.id));
    }
    if (s.limit !== undefined) tasks = tasks.slice(0, s.limit);
    const options: TerminalRunOptions = { ...episodeProtocolOf(s), profile, actionTimeoutMs: s.actionTimeoutS * 1000 };
    const say = (text: string) => {
      if (!s.quiet) process.stderr.write(text);
    };
    const instances: TerminalInstance[] = [];
    const facts = () => ({
      tasks: instances.map(({ task, image, prefix }) => ({
        task: task.id,
        image: image.tag,
        notes: image.notes,
        base_images: image.bases,
        prefix_steps: prefix.steps.length,
        prefix_shortened: prefix.shortened,
      })),
    });
    return {
      kind: 'terminal',
      title: `Terminal tasks: ${tasks.length} tasks × ${s.runs} runs (${profile} profile)`,
      config: {
        env: 'terminal',
        tasks: resolve(tasksPath),
        profile,
        runs: s.runs,
        prefix_steps: s.prefixSteps,
        max_steps: s.maxSteps,
        max_tokens: s.maxTokens,
        temperature: s.temperature,
        top_p: s.topP,
        action_timeout_s: s.actionTimeoutS,
      },
      probeSet: { path: tasksPath, instances: tasks.map((t) => ({ id: t.id, files: treeHash(t.dir) })) },
      recordSchema: TerminalEpisodeRecordSchema,
      episodes: tasks.length * s.runs,
      describe: (out) => `the terminal run in ${out} (${tasks.length} tasks × ${s.runs} runs, ${profile} profile)`,
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
          const prefix = await prefixFor(dir, task, image, options, s.prefixSteps);
          say(` (${prefix.steps.length} of ${prefix.solutionSteps} solution steps${prefix.shortened ? `: ${prefix.shortened}` : ''})\n`);
          instances.push({ task, image, prefix });
        }
      },
      run: (ckpt, backend, hooks) => runTerminal(ckpt, backend, instances, options, hooks),
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
      // Where images came from and that the tests ran offline: facts of this invocation, beside the settings a resume must match.
      recorded: () => ({ image_sources: describeImageSources(s.sources), tests_network: 'none' }),
      facts,
      notes: (f) => imageOriginLines((f.tasks ?? []) as TaskImageOrigin[]),
    };
  },
};
