/**
 * What a run reads back from its directory is checked against the schemas of src/schema/:
 * run.json, sample lines, ASAP episode lines, asap.json, reference prefixes, a build's
 * progress, and the documents `probe correlate` reads. A bad one is a one-line error naming
 * the file (its line, the field), and the run's finished work is left as it was; a good one
 * still resumes.
 *
 * First, by type: each schema says what the interface of the module that writes the record
 * says, so a field added to, removed from or retyped in one and not the other fails `tsc`
 * (npm test) here. The only differences are fields that runs from before them lack,
 * optional in the schema, each named below.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { BosRecord } from '../src/backends/bos.ts';
import { AsapStore } from '../src/swe/store.ts';
import { InputError } from '../src/errors.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { collectRuns } from '../src/report/collect.ts';
import { TrajectoryBuildSchema } from '../src/schema/build-progress.ts';
import { RunDir } from '../src/store/run-dir.ts';
import * as EpisodeRecords from '../src/schema/episode-records.ts';
import { UnitLog } from '../src/store/unit-log.ts';
import { readTerminalPrefix } from '../src/terminal/prefix.ts';
import { type CliRun, expectOneLineError, runProbe } from './helpers/cli.ts';
import { CKPT, DEMO_PROBES, tempDir } from './helpers/paths.ts';
import type { NetworkAttempt, RunBehaviour } from '../src/swe/behaviour.ts';
import type { EpisodeStep, Termination } from '../src/swe/episode.ts';
import type { AsapPrefix, PrefixStep } from '../src/swe/prefix.ts';
import type { EpisodeEnd, EpisodeStart } from '../src/swe/store.ts';
import type { Action } from '../src/formats/md-xml.ts';
import type { TrajectoryBuild, TrajectoryOutcome } from '../src/pipeline/build.ts';
import type { AptItemResult } from '../src/probes/aptbench.ts';
import type { BpbItem } from '../src/probes/bpb.ts';
import type { McqItem } from '../src/probes/mcq.ts';
import type { PasskItem, PasskSample } from '../src/probes/passk.ts';
import type { ResearchAction } from '../src/research/actions.ts';
import type { ResearchBehaviour, ResearchStep } from '../src/research/episode.ts';
import type { ResearchEpisodeRecord } from '../src/research/run.ts';
import type { TrajectoryOutcomeSchema } from '../src/schema/build-progress.ts';
import type {
  AsapPrefixSchema,
  EpisodeEndSchema,
  EpisodeStartSchema,
  EpisodeStepSchema,
  MdXmlActionSchema,
  NetworkAttemptSchema,
  PrefixStepSchema,
  ResearchActionSchema,
  ResearchBehaviourSchema,
  ResearchEpisodeRecordSchema,
  ResearchStepSchema,
  RunBehaviourSchema,
  TerminalActionSchema,
  TerminalBehaviourSchema,
  TerminalEpisodeRecordSchema,
  TerminalPrefixSchema,
  TerminalPrefixStepSchema,
  TerminalStepSchema,
  TerminationSchema,
} from '../src/schema/episode-records.ts';
import type { TamperingSchema } from '../src/schema/record-fields.ts';
import type { BosRecordSchema, CheckpointRecordSchema, RunManifestSchema } from '../src/schema/run-manifest.ts';
import type {
  AptItemResultSchema,
  BpbItemSchema,
  McqItemSchema,
  PasskItemSchema,
  PasskSampleSchema,
  RungCostSchema,
} from '../src/schema/sample-results.ts';
import type { CheckpointRecord, RunManifest } from '../src/store/run-dir.ts';
import type { TerminalAction } from '../src/terminal/actions.ts';
import type { TerminalBehaviour, TerminalStep } from '../src/terminal/episode.ts';
import type { TerminalPrefix, TerminalPrefixStep } from '../src/terminal/prefix.ts';
import type { TerminalEpisodeRecord } from '../src/terminal/run.ts';
import type { RungCost } from '../src/validate/run.ts';
import type { Tampering } from '../src/verify/harness-paths.ts';

/** A type as its members say it, all the way down (an interface and the object type zod infers compare alike). */
type Plain<T> = T extends readonly unknown[] ? { [K in keyof T]: Plain<T[K]> } : T extends object ? { [K in keyof T]: Plain<T[K]> } : T;
/** The same type, member for member: optional where optional, no member more or less. */
type Same<A, B> = (<X>() => X extends Plain<A> ? 1 : 2) extends <X>() => X extends Plain<B> ? 1 : 2 ? true : false;
/** `T` with the fields `K`, which records from before them lack, optional. */
type Older<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/** Compiles only when its argument is `true`. */
function same<_ extends true>(): void {}

same<Same<z.infer<typeof TamperingSchema>, Tampering>>();
same<Same<z.infer<typeof BosRecordSchema>, BosRecord>>();
same<Same<z.infer<typeof CheckpointRecordSchema>, Older<CheckpointRecord, 'path'>>>();
same<
  Same<
    z.infer<typeof RunManifestSchema>,
    Older<Omit<RunManifest, 'checkpoints'>, 'resumed'> & { checkpoints: Older<CheckpointRecord, 'path'>[] }
  >
>();

same<Same<z.infer<typeof BpbItemSchema>, BpbItem>>();
same<Same<z.infer<typeof McqItemSchema>, McqItem>>();
same<Same<z.infer<typeof PasskSampleSchema>, PasskSample>>();
same<Same<z.infer<typeof PasskItemSchema>, PasskItem>>();
same<Same<z.infer<typeof AptItemResultSchema>, AptItemResult>>();
same<Same<z.infer<typeof RungCostSchema>, RungCost>>();
same<Same<z.infer<typeof TrajectoryOutcomeSchema>, Older<TrajectoryOutcome, 'status'>>>();
same<Same<z.infer<typeof TrajectoryBuildSchema>, Omit<TrajectoryBuild, 'outcome'> & { outcome: Older<TrajectoryOutcome, 'status'> }>>();

same<Same<z.infer<typeof MdXmlActionSchema>, Action>>();
same<Same<z.infer<typeof TerminationSchema>, Termination>>();
same<Same<z.infer<typeof EpisodeStepSchema>, EpisodeStep>>();
same<Same<z.infer<typeof EpisodeStartSchema>, EpisodeStart>>();
same<Same<z.infer<typeof NetworkAttemptSchema>, NetworkAttempt>>();
same<Same<z.infer<typeof RunBehaviourSchema>, RunBehaviour>>();
same<Same<z.infer<typeof EpisodeEndSchema>, EpisodeEnd>>();
same<Same<z.infer<typeof PrefixStepSchema>, PrefixStep>>();
same<Same<z.infer<typeof AsapPrefixSchema>, AsapPrefix>>();

same<Same<z.infer<typeof TerminalActionSchema>, TerminalAction>>();
same<Same<z.infer<typeof TerminalStepSchema>, TerminalStep>>();
same<Same<z.infer<typeof TerminalBehaviourSchema>, TerminalBehaviour>>();
same<Same<z.infer<typeof TerminalEpisodeRecordSchema>, TerminalEpisodeRecord>>();
same<Same<z.infer<typeof TerminalPrefixStepSchema>, TerminalPrefixStep>>();
same<Same<z.infer<typeof TerminalPrefixSchema>, TerminalPrefix>>();

same<Same<z.infer<typeof ResearchActionSchema>, ResearchAction>>();
same<Same<z.infer<typeof ResearchStepSchema>, ResearchStep>>();
same<Same<z.infer<typeof ResearchBehaviourSchema>, ResearchBehaviour>>();
same<Same<z.infer<typeof ResearchEpisodeRecordSchema>, ResearchEpisodeRecord>>();

// The check itself tells types apart: a field more, a field made optional, a field retyped; not the order of fields.
type Base = { a: string; b: number | null };
same<Same<Base, { b: number | null; a: string }>>();
false satisfies Same<Base, Base & { c: string }>;
false satisfies Same<Base, Older<Base, 'b'>>;
false satisfies Same<Base, { a: string; b: number }>;

// --- At run time: a bad file is one line naming it, and a good one resumes ------------------

/** The InputError `act` throws: one line, starting with what it must name. */
function oneLineError(act: () => unknown, names: string): string {
  let message: string | undefined;
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    message = (error as InputError).message;
  }
  expect(message, 'no error').toBeDefined();
  expect(message).not.toContain('\n');
  expect(message!.startsWith(names), message).toBe(true);
  return message!;
}

/** Replaces the JSON of line `n` (1-based) of a JSON-lines file by what `edit` makes of it. */
function editLine(file: string, n: number, edit: (record: Record<string, unknown>) => unknown): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  lines[n - 1] = JSON.stringify(edit(JSON.parse(lines[n - 1]!) as Record<string, unknown>));
  writeFileSync(file, lines.join('\n'));
}

function editJson(file: string, edit: (record: Record<string, unknown>) => unknown): void {
  writeFileSync(file, JSON.stringify(edit(JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>)));
}

/** Every file of a run directory and its bytes: what a refused resume must leave as it was. */
function snapshot(dir: string, files: string[]): Record<string, string> {
  return Object.fromEntries(files.filter((f) => existsSync(join(dir, f))).map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
}

describe('a `probe bpb --out` run directory resumed', () => {
  const bpb = (out: string, ...extra: string[]) =>
    runProbe(['bpb', '--ckpt', CKPT.prose, '--probes', DEMO_PROBES, '--limit', '2', '--out', out, '--no-cache', '--json', ...extra]);
  const bpbOf = (run: CliRun) => (JSON.parse(run.stdout) as { results: Array<{ bpb: number }> }).results.map((r) => r.bpb);
  let finished: string;
  let original: number[];
  beforeAll(() => {
    finished = join(tempDir(), 'run');
    const run = bpb(finished);
    expect(run.code, run.stderr).toBe(0);
    original = bpbOf(run);
  }, 120_000);

  it('with a run.json of another shape: one line naming the file and field, nothing of the run touched; fixed, it resumes', () => {
    const dir = join(tempDir(), 'run');
    cpSync(finished, dir, { recursive: true });
    const before = snapshot(dir, ['run.json', 'results.json', 'bpb/samples.jsonl']);
    editJson(join(dir, 'run.json'), (m) => ({ ...m, checkpoints: [{ ...(m.checkpoints as object[])[0], content_hash: 42 }] }));
    const edited = readFileSync(join(dir, 'run.json'), 'utf8');
    expectOneLineError(
      bpb(dir, '--resume'),
      new RegExp(
        `^probe: ${join(dir, 'run.json')}: field "checkpoints\\.0\\.content_hash": .*expected string.* \\(found 42\\): not a run manifest`,
      ),
    );
    expect(snapshot(dir, ['run.json', 'results.json', 'bpb/samples.jsonl'])).toEqual({ ...before, 'run.json': edited });

    writeFileSync(join(dir, 'run.json'), '{"verb": "bpb",\n');
    expectOneLineError(bpb(dir, '--resume'), new RegExp(`^probe: ${join(dir, 'run.json')}: not JSON \\(.*\\): not a run manifest`));

    writeFileSync(join(dir, 'run.json'), before['run.json']!);
    const resumed = bpb(dir, '--resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(bpbOf(resumed)).toEqual(original);
  }, 120_000);

  it('with a sample line of another shape: its checkpoint fails naming the file, line and field, and the log is kept; fixed, it resumes', () => {
    const dir = join(tempDir(), 'run');
    cpSync(finished, dir, { recursive: true });
    const log = join(dir, 'bpb', 'samples.jsonl');
    const good = readFileSync(log, 'utf8');
    editLine(log, 2, (line) => ({ ...line, result: { ...(line.result as object), nats: '1e3' } }));
    const bad = readFileSync(log, 'utf8');
    const run = bpb(dir, '--resume');
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    const errors = run.stderr.split('\n').filter((l) => l.startsWith('probe:'));
    expect(errors).toEqual([
      `probe: ${log}:2: field "result.nats": expected a number (found "1e3"): not a bpb sample line as probe writes it`,
    ]);
    expect(readFileSync(log, 'utf8')).toBe(bad);

    writeFileSync(log, good);
    const resumed = bpb(dir, '--resume');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(bpbOf(resumed)).toEqual(original);
    // Read back, not scored again: the log still has its two lines.
    expect(readFileSync(log, 'utf8')).toBe(good);
  }, 120_000);

  it('an old run.json (no checkpoint path, a field this probe does not know) still resumes, and keeps the field', () => {
    const dir = join(tempDir(), 'run');
    cpSync(finished, dir, { recursive: true });
    editJson(join(dir, 'run.json'), (m) => ({
      ...m,
      recorded_by: 'an older probe',
      checkpoints: (m.checkpoints as Array<Record<string, unknown>>).map(({ path: _path, ...c }) => c),
    }));
    const input = { verb: 'bpb', config: { dtype: 'fp32' }, checkpoints: [], probe_set: null, seeds: {} };
    const manifest = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as RunManifest;
    const resumed = RunDir.open(dir, { ...input, probe_set: manifest.probe_set, seeds: manifest.seeds }, { resume: true });
    expect(resumed.status).toBe('resumed');
    expect(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'))).toMatchObject({
      recorded_by: 'an older probe',
      resumed: [expect.any(String)],
    });
    expect(resumed.memo<BpbItem>('bpb', CKPT.prose).get('demo-01')).toMatchObject({ id: 'demo-01', bytes: expect.any(Number) });
  });
});

/** A run directory with no checkpoints yet, for sample logs written and read by hand. */
function emptyRun(dir = join(tempDir(), 'run')): RunDir {
  return RunDir.open(dir, { verb: 'asap', config: {}, checkpoints: [], probe_set: null, seeds: {} }, { resume: true });
}

const terminalStep: TerminalStep = {
  index: 0,
  completion: 'ls\n<bash>ls</bash>',
  finish: 'action',
  tokens: 9,
  action: { kind: 'bash', command: 'ls' },
  error: null,
  outcome: 'executed',
  observation: 'a b',
  exitCode: 0,
  timedOut: false,
  modelMs: 3,
  envMs: 5,
};
const terminalEpisode: TerminalEpisodeRecord = {
  task_id: 'hello-world',
  run: 0,
  seed: 1,
  resolved: false,
  reward: 0,
  reason: null,
  termination: 'step_limit',
  behaviour: { actions: 1, parsable_turns: 1, submitted: false, failed_commands: 0, key_presses: 0 },
  steps: [terminalStep],
  verifier_output: '1 failed',
};
const researchEpisode: ResearchEpisodeRecord = {
  query_id: 'q1',
  run: 1,
  seed: 2,
  answer: 'MIT',
  correct: true,
  termination: 'answered',
  behaviour: { searches: 1, documents_opened: 0, gold_opened: false, gold_seen: true, answered: true, parsable_turns: 1 },
  steps: [
    {
      index: 0,
      completion: '<answer>MIT</answer>',
      finish: 'action',
      tokens: 4,
      action: { kind: 'answer', text: 'MIT' },
      error: null,
      outcome: 'answered',
      observation: null,
      modelMs: 2,
    },
  ],
};

describe('sample lines of the episode environments', () => {
  it.each([
    [
      'terminal',
      terminalEpisode,
      (r: Record<string, unknown>) => ({ ...r, steps: [{ ...terminalStep, action: { kind: 'type' } }] }),
      'result.steps.0.action.kind',
    ],
    ['research', researchEpisode, (r: Record<string, unknown>) => ({ ...r, termination: 'gave_up' }), 'result.termination'],
  ] as const)('%s: a line of another shape names the file, line and field; good lines read back', (probe, episode, spoil, field) => {
    // As the environment's run declares its records (RunDir.declareSamples) before it reads any.
    const declared = (dir?: string) => {
      const opened = emptyRun(dir);
      opened.declareSamples(
        probe,
        probe === 'terminal' ? EpisodeRecords.TerminalEpisodeRecordSchema : EpisodeRecords.ResearchEpisodeRecordSchema,
      );
      return opened;
    };
    const run = declared();
    run.memo(probe, CKPT.agent).put('a', episode);
    run.memo(probe, CKPT.agent).put('b', episode);
    const log = run.samplesFile(probe);
    expect(declared(run.dir).memo(probe, CKPT.agent).get('b')).toEqual(episode);
    editLine(log, 2, (line) => ({ ...line, result: spoil(line.result as Record<string, unknown>) }));
    const bad = readFileSync(log, 'utf8');
    oneLineError(() => declared(run.dir).memo(probe, CKPT.agent), `${log}:2: field "${field}": `);
    oneLineError(() => declared(run.dir).samples(probe), `${log}:2: field "${field}": `);
    expect(readFileSync(log, 'utf8')).toBe(bad);
  });
});

describe('an ASAP run directory', () => {
  const start: EpisodeStart = { type: 'start', checkpoint: 'ckpt', instance: 'shop__pricing-1', run: 0, seed: 7 };
  const step: EpisodeStep = {
    index: 0,
    completion: 'Look.\n<str_replace_editor command="view" path="shop.py">',
    finish: 'action',
    tokens: 12,
    action: { kind: 'str_replace_editor', command: 'view', path: 'shop.py' },
    error: null,
    outcome: 'executed',
    observation: '1 def price():',
    exitCode: 0,
    timedOut: false,
    patch: '',
    toolState: '{"open":"shop.py"}',
    modelMs: 4,
    sandboxMs: 6,
  };
  const end: EpisodeEnd = {
    type: 'end',
    termination: 'step_limit',
    resolved: false,
    reason: null,
    final_patch: '',
    fail_to_pass: { passed: [], failed: ['test_price'] },
    pass_to_pass: { passed: ['test_ok'], failed: [] },
    behaviour: {
      turns: 1,
      parsable_turns: 1,
      valid_tool_calls: 1,
      edit_steps: 0,
      autonomous_edits: false,
      active_testing: false,
      applicable_patch: true,
      empty_patch: true,
      explicit_submission: false,
      repeated_action_termination: false,
      recoveries: { format: 0, submit: 0, repeat: 0 },
      regressions: 0,
      changed_lines: 0,
      relevant_file_access: true,
      network_attempts: [],
    },
    model_ms: 4,
    sandbox_ms: 6,
    setup_ms: 1,
    verify_ms: 9,
    wall_ms: 30,
  };
  const prefix: AsapPrefix = {
    instance: 'shop__pricing-1',
    reference: 'ref.traj.json',
    steps: [{ from: 0, thought: 'Run it.', action: { kind: 'bash', command: 'python shop.py' }, observation: 'ok' }],
    text: '# Task',
    state: { patch: '', toolState: null },
    solutionFiles: ['shop.py'],
  };

  it('an episode line of another shape names the file, line and field, and the episode is kept; a good one resumes', () => {
    const dir = tempDir();
    const store = new AsapStore(dir);
    store.startEpisode(start);
    store.appendStep(start, step);
    store.endEpisode(start, end);
    expect(new AsapStore(dir).readEpisode('ckpt', start.instance, 0)).toEqual({ start, steps: [step], end });

    const file = store.episodeFile('ckpt', start.instance, 0, 'jsonl');
    editLine(file, 2, (line) => ({ ...line, outcome: 'exploded' }));
    const bad = readFileSync(file, 'utf8');
    const message = oneLineError(() => new AsapStore(dir).readEpisode('ckpt', start.instance, 0), `${file}:2: field "outcome": `);
    expect(message).toContain('(found "exploded"): not an ASAP episode line as probe writes it');
    expect(readFileSync(file, 'utf8')).toBe(bad);
    // A line that is none of start, step and end is not skipped either.
    editLine(file, 2, () => ({ type: 'step', ...step }));
    editLine(file, 3, (line) => ({ ...line, type: 'finish' }));
    oneLineError(() => new AsapStore(dir).readEpisode('ckpt', start.instance, 0), `${file}:3: field "type": `);
  });

  it('a prefix of another shape names the file and field; a good one is read back as written', () => {
    const dir = tempDir();
    const store = new AsapStore(dir);
    store.writePrefix(prefix);
    expect(new AsapStore(dir).readPrefix(prefix.instance)).toEqual(prefix);
    editJson(store.prefixFile(prefix.instance), (p) => ({ ...p, state: { patch: '', toolState: 3 } }));
    oneLineError(() => store.readPrefix(prefix.instance), `${store.prefixFile(prefix.instance)}: field "state.toolState": `);
  });

  it('asap.json that is not an object of settings names the file', () => {
    const dir = tempDir();
    const store = new AsapStore(dir);
    expect(store.claim({ runs: 2 })).toBe('new');
    store.startEpisode(start);
    expect(new AsapStore(dir).claim({ runs: 2 })).toBe('resumed');
    writeFileSync(join(dir, 'asap.json'), '[2]');
    oneLineError(() => new AsapStore(dir).claim({ runs: 2 }), `${join(dir, 'asap.json')}: Invalid input: expected record, received array`);
  });
});

describe('a Terminal-Bench prefix kept in the run directory', () => {
  it('of another shape names the file and field; a good one is read back as written', () => {
    const dir = tempDir();
    const file = join(dir, 'hello.bash.json');
    const prefix: TerminalPrefix = {
      task: 'hello',
      profile: 'bash',
      solutionSteps: 2,
      steps: [{ thought: 'Make it.', command: 'echo hi > hello.txt', observation: '' }],
      shortened: null,
      text: '# Task',
    };
    writeFileSync(file, JSON.stringify(prefix));
    expect(readTerminalPrefix(file, dir)).toEqual(prefix);
    writeFileSync(file, JSON.stringify({ ...prefix, profile: 'zsh' }));
    oneLineError(() => readTerminalPrefix(file, dir), `${file}: field "profile": `);
  });
});

describe("a probe-set build's progress log", () => {
  it('a unit of another shape names the file, line and field, and the log is kept; good units resume', () => {
    const file = join(tempDir(), 'build.progress.jsonl');
    const [item] = loadProbeItems(DEMO_PROBES);
    const built: TrajectoryBuild = {
      outcome: { trajectory: 't.traj.json', task: item!.task, status: 'accepted', decisiveStep: 3, rejected: null },
      items: [item!],
    };
    const open = (resume: boolean) =>
      UnitLog.open<TrajectoryBuild>(file, { trajectories: 'h' }, { resume, what: 'probe build', units: TrajectoryBuildSchema });
    open(false).put('t.traj.json', built);
    expect(open(true).get('t.traj.json')).toEqual(built);

    editLine(file, 2, (line) => ({ ...line, value: { ...built, items: [{ ...item, gold: 7 }] } }));
    const bad = readFileSync(file, 'utf8');
    oneLineError(() => open(true), `${file}:2: field "value.items.0.gold": `);
    expect(readFileSync(file, 'utf8')).toBe(bad);
  });
});

describe('probe correlate --results', () => {
  it('a document whose items are not as probe bpb --json writes them is one line naming the file and field', () => {
    const dir = tempDir();
    const results = join(dir, 'bpb.json');
    const scores = join(dir, 'scores.csv');
    writeFileSync(scores, 'checkpoint,score\na,0.1\nb,0.2\n');
    const item = (nats: unknown) => ({ id: 'i', nats, bytes: 10 });
    writeFileSync(
      results,
      JSON.stringify({
        results: [
          { checkpoint: 'a', bpb: 1, items: [item(7)] },
          { checkpoint: 'b', bpb: 2, items: [item('14')] },
        ],
      }),
    );
    expectOneLineError(
      runProbe(['correlate', '--results', results, '--scores', scores]),
      new RegExp(`^probe: ${results}: field "results\\.1\\.items\\.0\\.nats": .* \\(found "14"\\): not a probe --json document`),
    );
  });
});

describe('probe report', () => {
  it('a run.json whose checkpoints are not as a run writes them names the file and field', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'run.json'), JSON.stringify({ verb: 'bpb', checkpoints: [{ name: 'a', content_hash: null, control: 'yes' }] }));
    writeFileSync(join(dir, 'results.json'), JSON.stringify({ results: [] }));
    oneLineError(() => collectRuns([dir]), `${join(dir, 'run.json')}: field "checkpoints.0.control": `);
  });
});
