/**
 * `probe demo`'s run: the probe set built from the demo trajectories (or read from the
 * cache), then the ladder over the embedded checkpoints into the same run directory, then
 * its HTML report. One demo writes a run directory at a time (the lock is taken before the
 * build), and a build killed half-way resumes from its progress log.
 */
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ResultCache } from '../backends/cache.ts';
import type { HttpBackendOptions } from '../backends/http/backend.ts';
import { REPO_ROOT } from '../embedded.ts';
import { InputError } from '../errors.ts';
import type { ContextFormat } from '../replay/render-context.ts';
import { collectRuns } from '../report/collect.ts';
import { renderReport } from '../report/html.ts';
import { currentRun, enterStage, withRunStages } from '../report/run-stages.ts';
import { openSandbox } from '../sandbox/open.ts';
import { TrajectoryBuildSchema } from '../schema/build-progress.ts';
import { ensureRequirements } from '../setup/requirements.ts';
import { ensureOutputDir } from '../store/output-path.ts';
import { existingRunError } from '../store/run-dir.ts';
import { lockRunDir } from '../store/run-lock.ts';
import { UnitLog } from '../store/unit-log.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { loadTasks } from '../verify/load-task.ts';
import { buildProbeSet, type TrajectoryBuild, trajectoriesHash, writeProbeItems } from './build.ts';
import { buildCacheKey, readCachedBuild, writeCachedBuild } from './build-cache.ts';
import { reportFailures } from './failures.ts';
import { type LadderOutcome, type LadderSettings, ladderConfig, runLadder, SCREEN_STAGES } from './ladder.ts';
import { passkItemsOf } from './rungs/passk.ts';
import { timestampedRunDir } from './open-run.ts';
import { openScoringRun } from './scoring-run.ts';

export const DEMO_TRAJECTORIES = join(REPO_ROOT, 'trajectories');
export const DEMO_TASKS = join(REPO_ROOT, 'verifiers');

/**
 * The demo's stages and their shares of its time on a cold cache (measured: docs/benchmarks.md),
 * for the one progress display and its ETA over the whole run.
 */
const DEMO_STAGES = [{ name: 'build', share: 0.2 }, ...SCREEN_STAGES];

export interface DemoSettings {
  /** The run directory; default runs/demo-<time>. */
  out?: string | undefined;
  resume: boolean;
  /** Install missing system packages (bubblewrap, pytest, git) as root. */
  install: boolean;
  quiet: boolean;
  cache: ResultCache | undefined;
  http: HttpBackendOptions;
  shortlist: number;
  n: number;
  asapRuns: number;
  asapMaxSteps: number;
  passkMaxTokens: number;
  passkGoldMargin: number;
  asapMaxTokens: number;
  asapInstances: number;
  concurrency: number;
  includeControls?: boolean | undefined;
  asapEnvs: string[];
  /** pass@K on one rendering of each trajectory, or on all. */
  passkRenderings: 'one' | 'all';
}

export interface DemoOutcome {
  out: string;
  /** The HTML report's path. */
  report: string;
  minutes: string;
  /** Seconds each stage took. */
  stages: Array<{ stage: string; seconds: number }>;
  ladder: LadderOutcome;
  /** The `errors` field of the results (reported already). */
  errors: Record<string, unknown>;
  /** Probe items scored, and those pass@K sampled on. */
  items: number;
  passkItems: number;
}

export function runDemo(s: DemoSettings): Promise<DemoOutcome> {
  return withRunStages(DEMO_STAGES, () => demo(s));
}

async function demo(s: DemoSettings): Promise<DemoOutcome> {
  const started = Date.now();
  const out = s.out ?? timestampedRunDir('demo');
  const say = (text: string) => {
    if (!s.quiet) process.stderr.write(text);
  };
  // A bare machine has no bubblewrap or pytest yet: as root, install them (saying so) before any work.
  ensureRequirements({ install: s.install, log: (line) => process.stderr.write(line) });
  const tasks = await loadTasks(DEMO_TASKS);
  const probesFile = join(out, 'probes.jsonl');
  ensureOutputDir(out, '--out');
  lockRunDir(out); // from the build on: one demo writes this directory at a time

  // 1. The probe set, built once per run directory (a resumed demo keeps the one it built).
  // With the cache on, a set built before from the same trajectories, tasks, settings and probe code is read back (build-cache.ts).
  const cache = s.cache;
  const build = { contexts: ['native', 'asap'] as ContextFormat[], restore: 'patch' as const, distractors: true, repeats: 3 };
  /** Replays the demo trajectories into `probesFile` (resuming from its progress log), and keeps the set in the cache under `buildKey`. */
  const buildDemoProbes = async (buildKey: string | undefined) => {
    say(
      `Building probes from ${relative(process.cwd(), DEMO_TRAJECTORIES) || DEMO_TRAJECTORIES} (replaying each trajectory in a jailed sandbox)\n`,
    );
    const progressLog = UnitLog.open<TrajectoryBuild>(
      join(out, 'build.progress.jsonl'),
      { trajectories: trajectoriesHash(DEMO_TRAJECTORIES) },
      { resume: s.resume, what: 'probe build', units: TrajectoryBuildSchema },
    );
    const built = await buildProbeSet({
      trajectories: DEMO_TRAJECTORIES,
      tasks,
      contexts: build.contexts,
      restore: build.restore,
      distractors: build.distractors,
      replay: { openSandbox: (t) => openSandbox('local', t), sandboxName: 'local', concurrency: 4, repeats: build.repeats },
      quiet: s.quiet,
      memo: progressLog,
    });
    if (built.inputErrors) throw new InputError({ file: DEMO_TRAJECTORIES }, `${built.inputErrors} demo trajectories could not be read`);
    writeProbeItems(probesFile, built.items);
    if (cache && buildKey) writeCachedBuild(cache.dir, buildKey, probesFile);
    progressLog.remove();
    say(`${built.items.length} probe items from ${built.trajectories.filter((t) => !t.rejected).length} trajectories → ${probesFile}\n`);
  };
  if (!existsSync(probesFile)) {
    if (existsSync(join(out, 'run.json')) && !s.resume) throw existingRunError(join(out, 'run.json'));
    enterStage('build');
    const buildKey = cache ? buildCacheKey({ trajectories: DEMO_TRAJECTORIES, tasksDir: DEMO_TASKS, settings: build }) : undefined;
    if (cache && buildKey && readCachedBuild(cache.dir, buildKey, probesFile))
      say(
        `Probes: the set built before from these trajectories, tasks and probe source, read from the cache in ${cache.dir} (--no-cache builds it again)\n`,
      );
    else await buildDemoProbes(buildKey);
  }

  // 2. The ladder, into the same run directory.
  const settings: LadderSettings = {
    shortlist: s.shortlist,
    n: s.n,
    seed: 0,
    tasks,
    tasksPath: DEMO_TASKS,
    reference: DEMO_TRAJECTORIES,
    asapRuns: s.asapRuns,
    asapMaxSteps: s.asapMaxSteps,
    passkMaxTokens: s.passkMaxTokens,
    passkGoldMargin: s.passkGoldMargin,
    asapMaxTokens: s.asapMaxTokens,
    asapInstances: s.asapInstances,
    concurrency: s.concurrency,
    includeControls: s.includeControls,
    asapEnvs: s.asapEnvs,
    passkOnePerTrajectory: s.passkRenderings === 'one',
  };
  const run = openScoringRun({
    verb: 'demo',
    out,
    resume: s.resume,
    probes: probesFile,
    http: s.http,
    dtype: undefined,
    engine: undefined,
    bos: undefined,
    cache,
    quiet: s.quiet,
    config: ladderConfig(settings),
    seeds: { sampling: 0 },
  });
  const ladder = await runLadder(run, settings);
  const errors = reportFailures(ladder.failures);
  run.dir!.writeResults({ results: ladder.rows, shortlist: ladder.shortlist, asap_out: ladder.asapOut, ...errors });

  // 3. The report.
  const html = join(out, 'report.html');
  enterStage('report');
  writeFileAtomic(html, renderReport(collectRuns([out]), { title: 'probe demo: the embedded checkpoint ladder' }));
  const stages = currentRun()?.timings() ?? [];
  return {
    out,
    report: html,
    minutes: ((Date.now() - started) / 60_000).toFixed(1),
    stages,
    ladder,
    errors,
    items: run.items.length,
    passkItems: passkItemsOf(run.items, settings).length,
  };
}
