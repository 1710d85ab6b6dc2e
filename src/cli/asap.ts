/** `probe asap`: frozen base models drive whole episodes; Pass@k, Intersection@n and behaviour. */
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { addSamplingOptions } from './sampling-options.ts';
import { ASAP_FORMATS } from '../formats/asap-transcripts.ts';
import { TOOL_PROFILES } from '../swe/profiles.ts';
import { SWE_ENVIRONMENT } from '../swe/environment.ts';
import { printEpisodesTable } from './episodes-table.ts';
import type { AsapResult } from '../swe/run.ts';
import { REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import { formatPercent, formatTable } from '../report/table.ts';
import { tableName } from '../report/checkpoint-name.ts';
import { SANDBOX_KINDS } from '../settings/sandbox-kinds.ts';
import { addImageSourceOptions, type ImageSourceFlags, imageSources } from './image-source-options.ts';
import { loadTasks } from '../verify/load-task.ts';
import { integer, nonNegativeInteger, positiveInteger, timeoutSeconds } from './args.ts';
import { ASAP_RUN_DEFAULTS, type AsapRunSettings, runAsapOverCheckpoints } from '../pipeline/asap.ts';
import { reportFailures } from '../pipeline/failures.ts';
import { resolveCheckpoints } from '../pipeline/checkpoints.ts';
import { addCheckpointOptions, type CheckpointFlags } from './checkpoint-options.ts';
import { addHttpOptions, httpOptions, type HttpFlags } from './http-options.ts';
import { addRunOptions, resultCache, type RunFlags } from './run-options.ts';
import { addBosOption, type BosFlags } from './bos-option.ts';
import { addEnvironmentOptions, type EnvironmentVerbFlags, runEnvironmentVerb } from './asap-environment.ts';
import { ENVIRONMENTS, environmentOf } from '../environments/registry.ts';

/** The settings a flag sets under the setting's own name. */
const SETTING_FLAGS = [
  'reference',
  'runs',
  'concurrency',
  'profile',
  'format',
  'prefixSteps',
  'maxSteps',
  'maxTokens',
  'temperature',
  'topP',
  'seed',
  'sandbox',
] as const satisfies ReadonlyArray<keyof AsapRunSettings>;
type AsapSettingFlags = Pick<AsapRunSettings, (typeof SETTING_FLAGS)[number]>;

interface AsapFlags
  extends HttpFlags,
    RunFlags,
    BosFlags,
    ImageSourceFlags,
    CheckpointFlags,
    AsapSettingFlags,
    Omit<EnvironmentVerbFlags, keyof AsapSettingFlags> {
  env: string;
  tasks: string;
}

const DEFAULTS = ASAP_RUN_DEFAULTS;

/** The environments with profiles of their own, beside SWE's. */
const OTHER_PROFILES = ENVIRONMENTS.flatMap((e) => (e.episodes?.profiles ? [{ name: e.name, profiles: e.episodes.profiles }] : []));
const profilesHelp = ({ name, profiles: [first, ...rest] }: { name: string; profiles: readonly string[] }) =>
  `--env ${name}: ${first}, the default there${rest.length ? `, or ${rest.join(' or ')}` : ''}`;

export function asapCommand(): Command {
  return addRunOptions(
    addBosOption(
      addHttpOptions(
        addCheckpointOptions(
          addSamplingOptions(
            addImageSourceOptions(addEnvironmentOptions(new Command('asap')))
              .description(
                'ASAP: the base model drives whole agent episodes through its completion interface (md+xml, 3-step reference prefix, minimal recovery); Pass@k, Intersection@n and behaviour metrics. --env terminal: Terminal-Bench tasks (keystrokes to a tmux shell, or bash commands, in the task container). --env research: deep-research episodes over a document corpus (search, open, answer).',
              )
              .option(
                '--ckpt <path|url...>',
                'checkpoint directories (Hugging Face safetensors, run in process or by vLLM: --engine; or ONNX), GGUF files (served by llama-server) or server URLs (http://host:8000/v1; replicas comma-separated); default: the embedded ladder',
              )
              .option('--tasks <dir|file>', 'task records', join(REPO_ROOT, 'verifiers'))
              .option(
                '--reference <dir>',
                'reference trajectories, one per instance, named <instance_id>.<anything>',
                join(REPO_ROOT, 'trajectories'),
              )
              .option('--instances <id...>', 'only these instances')
              .option('--limit <n>', 'only the first N instances', positiveInteger)
              .option('--runs <n>', 'episodes per instance (distinct seeds)', positiveInteger, DEFAULTS.runs)
              .option('--concurrency <n>', 'episodes at once (one shared backend, one sandbox each)', positiveInteger, DEFAULTS.concurrency)
              .addOption(
                new Option('--profile <profile>', `tools the model may use (${OTHER_PROFILES.map(profilesHelp).join('; ')})`)
                  .choices([...new Set([...TOOL_PROFILES, ...OTHER_PROFILES.flatMap((e) => e.profiles)])])
                  .default(DEFAULTS.profile),
              )
              .addOption(
                new Option('--format <format>', 'transcript format (md+xml is the protocol; the others are for the ablation)')
                  .choices([...ASAP_FORMATS])
                  .default(DEFAULTS.format),
              )
              .option('--prefix-steps <k>', 'reference steps before the model starts', nonNegativeInteger, DEFAULTS.prefixSteps)
              .option('--max-steps <n>', 'model steps per episode', positiveInteger, DEFAULTS.maxSteps)
              .option('--max-tokens <n>', 'new tokens per step', positiveInteger, DEFAULTS.maxTokens),
            DEFAULTS,
          )
            .option('--seed <n>', 'seed of the run (episode seeds derive from it, the same for every checkpoint)', integer, DEFAULTS.seed)
            .option('--action-timeout <s>', 'seconds one action may run', timeoutSeconds, DEFAULTS.actionTimeoutS)
            .addOption(
              new Option('--sandbox <kind>', "where the model's actions run (always jailed, network off)")
                .choices([...SANDBOX_KINDS])
                .default(DEFAULTS.sandbox),
            )
            .option('--json', 'print one JSON document on stdout'),
        ),
      ),
    ),
    'run directory: run.json, asap.json, prefixes/, episodes/ (step by step), results.json; default: runs/asap-<settings hash>',
  )
    .addHelpText(
      'after',
      '\nExamples:\n  probe asap --ckpt checkpoints/attn-agent checkpoints/ngram-agent --runs 8 --concurrency 4 --out runs/asap-demo\n  probe asap --env terminal --ckpt checkpoints/attn-agent --runs 2 --out runs/terminal-demo\n  probe asap --env research --ckpt checkpoints/attn-agent --runs 2 --limit 4 --out runs/research-demo',
    )
    .action(async (flags: AsapFlags, command: Command) => {
      // An environment with episodes of its own runs them; the rest of this verb is SWE's, the protocol's own rung.
      const env = environmentOf(flags.env);
      if (env.episodes) return runEnvironmentVerb(env, flags, command.getOptionValueSource('profile') !== 'default');
      if (!(TOOL_PROFILES as readonly string[]).includes(flags.profile))
        throw new InputError(
          { file: '--profile' },
          `the ${flags.profile} profile is for --env terminal; repository tasks take ${TOOL_PROFILES.join(' or ')}`,
        );
      // All input is checked before any work.
      let tasks = await loadTasks(flags.tasks);
      // An empty task file would be a run of nothing that reports success.
      if (tasks.length === 0) throw new InputError({ file: flags.tasks }, 'holds no task records');
      if (flags.instances) {
        const known = new Set(tasks.map((t) => t.instance_id));
        const missing = flags.instances.filter((i) => !known.has(i));
        if (missing.length) throw new InputError({ file: flags.tasks, field: 'instance_id' }, `no task record for ${missing.join(', ')}`);
        tasks = tasks.filter((t) => flags.instances!.includes(t.instance_id));
      }
      if (flags.limit !== undefined) tasks = tasks.slice(0, flags.limit);
      const http = httpOptions(flags, flags.ckpt);
      const checkpoints = resolveCheckpoints(flags.ckpt, http, flags);
      const run = await runAsapOverCheckpoints(checkpoints, tasks, {
        sources: imageSources(flags),
        http,
        cache: resultCache(flags),
        dtype: flags.dtype,
        engine: flags.engine,
        resume: Boolean(flags.resume),
        bos: flags.bos,
        tasksPath: flags.tasks,
        ...pickSettings(flags),
        actionTimeoutS: flags.actionTimeout,
        out: flags.out,
        quiet: Boolean(flags.json),
      });
      const errors = reportFailures(run.failures);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ out: run.out, excluded: run.excluded, results: run.results, ...errors }, null, 2)}\n`);
        return;
      }
      printTables(run.results, flags, run.instances);
      process.stderr.write(`\nTranscripts: ${join(run.out, 'episodes')}   results: ${run.resultsFile}\n`);
    });
}

function pickSettings(flags: AsapFlags): AsapSettingFlags {
  return Object.fromEntries(SETTING_FLAGS.map((name) => [name, flags[name]])) as AsapSettingFlags;
}

function printTables(results: AsapResult[], flags: AsapFlags, instances: number): void {
  printEpisodesTable(
    SWE_ENVIRONMENT,
    results,
    flags.runs,
    `ASAP on ${instances} instances × ${flags.runs} runs (${flags.format}, ${flags.profile} profile, ${flags.prefixSteps}-step prefix)`,
  );
  process.stderr.write(
    `\nEpisode endings\n\n${formatTable(
      [
        'checkpoint',
        'submitted',
        'submitted empty',
        'step limit',
        'repeated action',
        'format error',
        'regressions',
        'tampering',
        'network tries',
      ],
      results.map((r) => [
        tableName(r.checkpoint),
        ...Object.values(r.terminations).map(String),
        formatPercent(r.behaviour.regressions),
        formatPercent(r.behaviour.tampering),
        `${r.behaviour.network_attempts} (${r.behaviour.network_blocked} blocked)`,
      ]),
      [1, 2, 3, 4, 5, 6, 7],
    )}\n`,
  );
}
