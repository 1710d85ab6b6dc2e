/**
 * An ASAP run for one checkpoint: n episodes per instance, run concurrently against one
 * shared backend, each in its own leased jailed sandbox, each saved step by step (a
 * finished episode is never run again; an unfinished one is run again from its start:
 * what its commands left in /tmp is not part of the saved state, and a resumed run must
 * equal an uninterrupted one — the cache makes the model calls of the rerun free).
 * The final patch (the working-tree diff) is applied to a clean base and graded by the
 * task's verifier; Pass@k is unbiased, Intersection@n counts instances solved in all n runs.
 */
import { samplerRecord } from '../backends/sampler-record.ts';
import type { CompletionBackend } from '../backends/types.ts';
import { writeToolState } from '../sandbox/run-action.ts';
import type { LoadedTask } from '../schema/task.ts';
import type { GraderLease, SandboxLease } from '../sandbox/pool.ts';
import { meanPassAtK } from '../stats/pass-at-k.ts';
import { countTerminations, type EpisodeJob, type EpisodesResult, runEpisodes } from '../asap/episodes.ts';
import { notPassed, verifyState, type Verdict } from '../verify/verifier.ts';
import { runBehaviour, summarizeBehaviour, type BehaviourSummary } from './behaviour.ts';
import { type EpisodeSettings, type EpisodeStep, runEpisode, type Termination, TERMINATIONS } from './episode.ts';
import { transcriptText } from '../formats/asap-transcripts.ts';
import { patchFiles } from './patch.ts';
import type { AsapPrefix } from './prefix.ts';
import type { AsapStore, EpisodeEnd, EpisodeStart } from './store.ts';

export interface AsapInstance {
  task: LoadedTask;
  prefix: AsapPrefix;
}

export interface AsapRunOptions {
  runs: number;
  concurrency: number;
  seed: number;
  ks: number[];
  settings: Omit<EpisodeSettings, 'seed'>;
  store: AsapStore;
  /** Sandboxes of a task: jailed, network off (model-generated commands run there). */
  leaseFor: (task: LoadedTask) => SandboxLease;
  /** Sandboxes that grade a task's final states: no episode's command runs in them. */
  gradersFor: (task: LoadedTask) => GraderLease;
  onEpisode?: () => void;
}

export interface AsapRunSummary {
  run: number;
  resolved: boolean;
  termination: Termination;
  steps: number;
  reason: string | null;
  transcript: string;
}

export interface AsapItem {
  instance: string;
  n: number;
  c: number;
  runs: AsapRunSummary[];
}

export interface AsapResult extends EpisodesResult<Termination> {
  instances: number;
  /** Instances solved in all n runs (`intersection` is their share). */
  intersection_count: number;
  behaviour: BehaviourSummary;
  /** Wall time of the run, and the episodes' own time in the model, in actions, restoring and grading (summed). */
  timing: { wall_ms: number; model_ms: number; sandbox_ms: number; setup_ms: number; verify_ms: number };
  items: AsapItem[];
}

export { episodeSeed } from '../asap/episodes.ts';

function relevantFiles(instance: AsapInstance): string[] {
  return instance.task.patch ? patchFiles(instance.task.patch).map((f) => f.path) : instance.prefix.solutionFiles;
}

function transcriptOf(
  start: EpisodeStart,
  instance: AsapInstance,
  steps: readonly EpisodeStep[],
  settings: AsapRunOptions['settings'],
  end?: EpisodeEnd,
): string {
  const head = `<!-- probe asap · checkpoint ${start.checkpoint} · instance ${start.instance} · run ${start.run} · seed ${start.seed} · ${settings.format.name} · ${settings.profile} profile -->\n`;
  const tail = end
    ? `\n\n<!-- episode ended: ${end.termination}; ${end.resolved ? 'RESOLVED' : `not resolved${end.reason ? ` (${end.reason.split('\n')[0]})` : ''}`} -->\n`
    : '\n';
  return head + transcriptText(instance.prefix.text, steps, settings.format) + tail;
}

/** Grades the final patch on a clean base, in a grader's sandbox (not the episode's). */
async function gradeFinal(
  graders: GraderLease,
  task: LoadedTask,
  patch: string,
): Promise<{ applies: boolean; verdict: Verdict | null; reason: string | null }> {
  const verdict = await verifyState(graders, task, { base_commit: task.base_commit, patch });
  if (!verdict.applies) return { applies: false, verdict: null, reason: verdict.reason ?? null };
  return { applies: true, verdict, reason: verdict.resolved ? null : (verdict.reason ?? null) };
}

async function runOne(
  checkpoint: string,
  backend: CompletionBackend,
  { instance, run, seed }: EpisodeJob<AsapInstance>,
  options: AsapRunOptions,
): Promise<EpisodeEnd> {
  const { store, settings } = options;
  const { task, prefix } = instance;
  const start: EpisodeStart = { type: 'start', checkpoint, instance: task.instance_id, run, seed };
  const saved = store.readEpisode(checkpoint, task.instance_id, run);
  if (saved.end) return saved.end;
  store.startEpisode(start);
  return options.leaseFor(task)(async (sb) => {
    const started = performance.now();
    await sb.restore({ base_commit: task.base_commit, patch: prefix.state.patch });
    await writeToolState(sb, prefix.state.toolState); // restore left /tmp empty
    const setupMs = performance.now() - started;
    const steps: EpisodeStep[] = [];
    const result = await runEpisode(
      {
        backend,
        sandbox: sb,
        baseCommit: task.base_commit,
        prefixText: prefix.text,
        prefixState: prefix.state,
        onStep: async (step) => {
          store.appendStep(start, step);
          steps.push(step);
          store.writeTranscript(start, transcriptOf(start, instance, steps, settings));
        },
      },
      { ...settings, seed: start.seed, label: `the episode of ${task.instance_id}, run ${run}` },
    );
    const finalPatch = result.steps.at(-1)?.patch ?? prefix.state.patch;
    const verifyStarted = performance.now();
    const graded = await gradeFinal(options.gradersFor(task), task, finalPatch);
    const verifyMs = performance.now() - verifyStarted;
    // A regression: a PASS_TO_PASS test failing in the final log, or gone from it (its module no longer imports).
    const behaviour = runBehaviour(
      result.steps,
      {
        termination: result.termination,
        patch: finalPatch,
        applies: graded.applies,
        passToPassFailed: graded.verdict ? notPassed(graded.verdict.passToPass) : [],
        tampering: graded.verdict?.tampering ?? [],
      },
      { testCmd: task.test_cmd, relevantFiles: relevantFiles(instance), prefixPatch: prefix.state.patch },
    );
    const end: EpisodeEnd = {
      type: 'end',
      termination: result.termination,
      resolved: graded.verdict?.resolved ?? false,
      reason: graded.reason,
      final_patch: finalPatch,
      fail_to_pass: graded.verdict?.failToPass ?? { passed: [], failed: task.FAIL_TO_PASS },
      pass_to_pass: graded.verdict?.passToPass ?? { passed: [], failed: task.PASS_TO_PASS },
      behaviour,
      model_ms: result.steps.reduce((a, s) => a + s.modelMs, 0),
      sandbox_ms: result.steps.reduce((a, s) => a + s.sandboxMs, 0),
      setup_ms: setupMs,
      verify_ms: verifyMs,
      wall_ms: performance.now() - started,
    };
    store.endEpisode(start, end);
    store.writeTranscript(start, transcriptOf(start, instance, result.steps, settings, end));
    return end;
  });
}

export async function runAsap(
  checkpoint: string,
  backend: CompletionBackend,
  instances: readonly AsapInstance[],
  options: AsapRunOptions,
): Promise<AsapResult> {
  const started = performance.now();
  // A finished episode is read back from its own file (runOne), so no memo here.
  const ends = await runEpisodes(
    instances,
    { ...options, idOf: (instance) => instance.task.instance_id },
    (job) => runOne(checkpoint, backend, job, options),
    { onItem: () => options.onEpisode?.() },
  );
  const items: AsapItem[] = instances.map((instance) => ({ instance: instance.task.instance_id, n: 0, c: 0, runs: [] }));
  ends.forEach((end, i) => {
    const item = items[Math.floor(i / options.runs)]!;
    const run = i % options.runs;
    item.n++;
    if (end.resolved) item.c++;
    item.runs.push({
      run,
      resolved: end.resolved,
      termination: end.termination,
      steps: end.behaviour.turns,
      reason: end.reason,
      transcript: options.store.episodeFile(checkpoint, item.instance, run, 'md'),
    });
  });
  const pass_at: Record<string, number> = {};
  for (const k of options.ks.filter((k) => k <= options.runs)) pass_at[String(k)] = meanPassAtK(items, k);
  const solvedAlways = items.filter((i) => i.n > 0 && i.c === i.n).length;
  return {
    checkpoint,
    backend: backend.id,
    ...(await samplerRecord(backend, options.settings)),
    runs: options.runs,
    instances: instances.length,
    pass_at,
    intersection: items.length ? solvedAlways / items.length : NaN,
    intersection_count: solvedAlways,
    terminations: countTerminations(TERMINATIONS, ends),
    behaviour: summarizeBehaviour(ends.map((e) => e.behaviour)),
    timing: {
      wall_ms: performance.now() - started,
      model_ms: ends.reduce((a, e) => a + e.model_ms, 0),
      sandbox_ms: ends.reduce((a, e) => a + e.sandbox_ms, 0),
      setup_ms: ends.reduce((a, e) => a + e.setup_ms, 0),
      verify_ms: ends.reduce((a, e) => a + e.verify_ms, 0),
    },
    items,
  };
}
