/**
 * `probe watch`: follows a training run. Each poll lists the watched directories; every
 * entry that is a finished checkpoint (discover.ts) and not yet scored gets the cheap rungs
 * — general code BPB (the baseline), Decisive-Action BPB, Patch MCQ — and, where plan.ts
 * says so, pass@K and ASAP. Everything goes into one run directory: the rungs' item logs
 * as every verb writes them, the watch's own record (log.ts), and after each checkpoint
 * results.json and trend.svg. A killed watch resumes: a scored checkpoint is never opened
 * again, a half-scored one continues from its item logs. A checkpoint that fails is
 * reported and recorded, and the watch goes on.
 */
import { realpathSync, type Stats, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type Checkpoint, checkpointKey, resolveCheckpoint } from '../backends/checkpoint.ts';
import { ENGINE_PROBES } from '../engines/engine-target.ts';
import { EndpointFailure } from '../backends/http/transport.ts';
import { ProbeError } from '../errors.ts';
import { forEachCheckpoint, runLoopOptions, type Failure, type ScoringRun } from '../pipeline/checkpoint-loop.ts';
import { asapTasksOf, checkReferences, runAsapRung } from '../pipeline/rungs/asap.ts';
import { scoreBpbAndMcq, scoreCodeBpb } from '../pipeline/rungs/cheap.ts';
import { type PasskRun, passkRunItems, passkSandboxes, scorePasskRung } from '../pipeline/rungs/passk.ts';
import { loggedScorer } from '../pipeline/rungs/scorer.ts';
import { type CodeBpbSettings, RUNG_DEFAULTS, type RungSettings, resolvedPaths, rungRecord } from '../pipeline/rungs/settings.ts';
import type { BpbResult } from '../probes/bpb.ts';
import { codePieces, type CodePiece } from '../probes/code-text.ts';
import type { McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import { formatTrendValue, trendPoints, type TrendPoint } from '../report/trend.ts';
import { trendChart } from '../report/trend-svg.ts';
import { settledTrend, writeTensorboard } from '../report/trend-tensorboard.ts';
import type { LoadedTask } from '../schema/task.ts';
import { ensureOutputDir } from '../store/output-path.ts';
import { checkpointRecords, type RunDir } from '../store/run-dir.ts';
import { writeFileAtomic } from '../util/atomic-file.ts';
import { interruptedBy } from '../util/interrupt.ts';
import { checkEntryTree, checkpointSpec, completeness, fingerprintOf, kindOf, listEntries, type WatchedEntry } from './discover.ts';
import type { Found } from './found.ts';
import type { JobStage } from './job-book.ts';
import { type CheapEvent, type FailedEvent, type ScoredEvent, WatchLog } from './log.ts';
import type { SlurmSettings } from '../slurm/settings.ts';
import { JOB_DECISION, SlurmDispatch, type WatchSide } from './slurm-dispatch.ts';
import { decideHeavy, type HeavyDecision, type HeavyRule } from './plan.ts';
import { type Announcement, announcementOf, type ReadyDir, readReadyDir } from './ready.ts';
import { type TrainingPosition, trainingPosition } from './step.ts';

export interface WatchSettings extends RungSettings, CodeBpbSettings {
  watched: string[];
  /** A file whose presence says a checkpoint is complete (else: the settle time). */
  marker?: string | undefined;
  /** Where the trainer announces finished checkpoints (ready.ts): the announcement alone says complete. */
  readyDir?: string | undefined;
  settleMs: number;
  pollMs: number;
  /** Score what is complete now and return. */
  once: boolean;
  rule: HeavyRule;
  /** Score each checkpoint in Slurm jobs instead of in this process (slurm-dispatch.ts). */
  slurm?: SlurmSettings | undefined;
  /** Where to write the trend as TensorBoard scalars (decides no number: not in watchConfig). */
  tensorboard?: string | undefined;
}

/** `probe watch`'s defaults: the rungs', pass@K and ASAP on the first checkpoint of a run, every 4th after it and any whose BPB moved by 0.25 bits/byte. */
export const WATCH_DEFAULTS = {
  settleS: 60,
  pollS: 30,
  every: 4,
  move: 0.25,
  ...RUNG_DEFAULTS,
} as const;

/** What decides a watch's numbers, for run.json (a restarted watch must match it). */
export function watchConfig(s: WatchSettings): Record<string, unknown> {
  return {
    ...rungRecord(s, ['code', 'tasks', 'reference']),
    every: s.rule.every,
    move: Number.isFinite(s.rule.move) ? s.rule.move : 'off',
    ...rungRecord(s, ['n', 'passk_max_tokens', 'asap_runs', 'asap_max_steps', 'asap_max_tokens', 'asap_instances', 'asap_profile']),
  };
}

/** A watch always has a run directory: it is what a restart resumes. */
export type WatchRun = Omit<ScoringRun, 'checkpoints' | 'dir'> & { dir: RunDir };

export interface WatchOutcome {
  /** Checkpoints scored by this invocation (cheap rungs at least). */
  scored: string[];
  trend: TrendPoint[];
  failures: FailedEvent[];
  /** Ready files that announced nothing, each said once: bad input (exit 2 for `--once`). */
  unreadable: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function say(run: WatchRun, text: string): void {
  if (!run.quiet) process.stderr.write(`${text}\n`);
}

/** A failure as a watch records it: bad input and broken servers are the checkpoint's; anything else is a bug and stops the watch. */
function asFailure(error: unknown): Failure | undefined {
  if (interruptedBy()) return undefined;
  return error instanceof ProbeError || error instanceof EndpointFailure ? error : undefined;
}

/** Checkpoints announced by path outside the watched directories: watched where they are. */
function announcedElsewhere(ready: ReadyDir | undefined, watched: readonly string[]): WatchedEntry[] {
  const inside = new Set(watched.map((dir) => realpathSync(dir)));
  const entries: WatchedEntry[] = [];
  for (const { path } of ready?.announcements ?? []) {
    if (!path || inside.has(dirname(path)) || entries.some((e) => e.path === path)) continue;
    let stats: Stats;
    try {
      stats = statSync(path);
    } catch {
      continue; // announced before it is there (or removed since): looked for again at the next poll
    }
    const kind = kindOf(path, stats);
    if (kind) entries.push({ path, watched: dirname(path), kind });
  }
  return entries;
}

/** Where an announced checkpoint sits: the run it was filed under and the step its ready file says. */
function announcedPosition(a: Announcement, guessed: TrainingPosition | undefined): TrainingPosition | undefined {
  if (a.run === undefined) return undefined;
  if (a.step === undefined) return guessed && { ...guessed, series: a.run };
  return { step: a.step, source: `its ready file ${basename(a.file)}`, series: a.run };
}

export class Watch {
  private readonly log: WatchLog;
  private readonly s: WatchSettings;
  private readonly code: CodePiece[];
  private readonly passkRun: PasskRun;
  private readonly asapTasks: LoadedTask[];
  /** Entries already said to be incomplete or unplaceable, so a poll every 30 s does not repeat itself. */
  private readonly told = new Map<string, string>();
  private readonly scoredNow: string[] = [];
  private readonly unreadable = new Map<string, string>();
  private readonly dispatch: SlurmDispatch | undefined;

  constructor(
    private readonly run: WatchRun,
    settings: WatchSettings,
  ) {
    // The paths its record names (watchConfig): a watch reads its code, tasks and references by them.
    this.s = resolvedPaths(settings);
    const { s } = this;
    this.log = new WatchLog(run.dir.dir);
    // Inputs of the later rungs are checked before any checkpoint is: a missing reference must not cost a night.
    this.code = codePieces(s.code);
    const tasks = new Map(s.tasks.map((t) => [t.instance_id, t]));
    this.passkRun = { items: passkRunItems(run.items, s, tasks), tasks, pools: passkSandboxes() };
    this.asapTasks = asapTasksOf(run.items, s);
    checkReferences(s, this.asapTasks);
    if (s.tensorboard) ensureOutputDir(s.tensorboard, '--tensorboard');
    this.dispatch = s.slurm && new SlurmDispatch(this.side(), s.slurm);
  }

  /** What the Slurm dispatcher does through this watch. */
  private side(): WatchSide {
    return {
      runDir: this.run.dir.dir,
      log: this.log,
      heavyWanted: this.heavyRungNames().length > 0,
      open: (found) => this.open(found),
      decide: (series, bpb) => this.decide(series, bpb),
      recordScored: (found, checkpoint, heavy) => this.recordScored(found, checkpoint, heavy),
      decided: (cheap) => this.decided(cheap),
      finished: (cheap) => this.finished(cheap),
      fail: (found, checkpoint, stage, error) => this.fail(found, checkpoint, stage, error),
      tell: (key, text) => this.tell(key, text),
    };
  }

  async start(): Promise<WatchOutcome> {
    const { scored, partly } = this.log.counts();
    const before = `${scored} checkpoint${scored === 1 ? '' : 's'} scored before${partly ? `, ${partly} part-way` : ''}`;
    const done = scored + partly;
    say(
      this.run,
      `${done ? `Resuming the watch in ${this.run.dir.dir} (${before})` : `Watching into ${this.run.dir.dir}`}: ${[...this.s.watched, ...(this.s.readyDir ? [`what ${this.s.readyDir} announces`] : [])].join(', ')} — complete = ${this.completeWhen()}${this.s.once ? '; once' : `; every ${this.s.pollMs / 1000} s`}`,
    );
    // A restart removed the last results.json (run-dir.ts): the report reads the watch as it stands from the start.
    if (done) this.writeOutputs();
    try {
      for (;;) {
        for (const found of this.poll()) {
          if (interruptedBy()) break;
          await (this.dispatch ? this.dispatch.take(found) : this.score(found));
        }
        await this.dispatch?.collect();
        // With --slurm, --once waits for the jobs it submitted.
        if ((this.s.once && !this.dispatch?.busy()) || interruptedBy()) break;
        await sleep(this.s.pollMs);
      }
    } finally {
      await this.passkRun.pools.close();
    }
    return {
      scored: this.scoredNow,
      trend: trendPoints(this.log.scores()),
      failures: this.log.failures(),
      unreadable: [...this.unreadable.values()],
    };
  }

  private completeWhen(): string {
    if (this.s.readyDir) return `announced in ${this.s.readyDir}`;
    return this.s.marker ? `${this.s.marker} present` : `nothing changed for ${this.s.settleMs / 1000} s`;
  }

  private tell(key: string, text: string): void {
    if (this.told.get(key) === text) return;
    this.told.set(key, text);
    say(this.run, text);
  }

  /** The trainer's announcements now, each unreadable ready file said once. */
  private announcements(): ReadyDir | undefined {
    if (!this.s.readyDir) return undefined;
    const ready = readReadyDir(this.s.readyDir);
    // Bad input, said even to --json (once per file, as a failed checkpoint is).
    for (const problem of ready.problems) {
      if (this.unreadable.get(problem.location.file) === problem.message) continue;
      this.unreadable.set(problem.location.file, problem.message);
      process.stderr.write(`probe: ${problem.message}: announces nothing\n`);
    }
    return ready;
  }

  /** The complete entries still to score, in training order (step, then name). */
  private poll(): Found[] {
    const found: Found[] = [];
    const ready = this.announcements();
    for (const entry of [...listEntries(this.s.watched, this.s.marker), ...announcedElsewhere(ready, this.s.watched)]) {
      let spec: string;
      try {
        spec = checkpointSpec(entry);
      } catch (error) {
        const failure = asFailure(error);
        if (!failure) throw error;
        this.tell(entry.path, `probe: ${failure.message}`);
        continue;
      }
      const key = checkpointKey(spec);
      const state = this.log.state(key);
      if (state.scored) continue;
      // The trainer's word on where it sits in training, where it gave one, before the name's.
      const recorded = state.cheap && { step: state.cheap.step, source: state.cheap.step_source, series: state.cheap.series };
      const guessed = recorded ?? trainingPosition(entry.path, entry.watched);
      const announcement = ready && announcementOf(ready, { path: entry.path, series: guessed?.series, step: guessed?.step });
      let complete: ReturnType<typeof completeness>;
      try {
        complete = completeness(entry, { marker: this.s.marker, settleMs: this.s.settleMs, announced: ready && Boolean(announcement) });
      } catch (error) {
        // Too big a tree to be a checkpoint: said once, and the other entries are still looked at.
        const failure = asFailure(error);
        if (!failure) throw error;
        this.tell(key, `probe: ${failure.message}: not scored`);
        continue;
      }
      if (!complete.complete) {
        this.tell(key, `watch: ${basename(entry.path)}: not complete yet (${complete.why})`);
        continue;
      }
      // A failed checkpoint is tried again when its files change, or when the watch restarts.
      if (state.failed && !state.scored && state.failed.fingerprint === complete.fingerprint && this.told.has(`failed:${key}`)) continue;
      const position = recorded ?? (announcement && announcedPosition(announcement, guessed)) ?? guessed;
      if (!position) {
        this.tell(
          key,
          `probe: ${entry.path}: no training step in its name or config.json (name it like step-4000, or put "step" in config.json): not scored`,
        );
        continue;
      }
      found.push({
        entry,
        spec,
        key,
        fingerprint: complete.fingerprint,
        step: position.step,
        stepSource: position.source,
        series: position.series,
      });
    }
    return found.sort((a, b) => a.step - b.step || a.entry.path.localeCompare(b.entry.path));
  }

  private fail(found: Found, checkpoint: string, stage: FailedEvent['stage'], error: Failure): void {
    // The watch goes on: the line names the checkpoint and the stage, whatever the error says.
    const message =
      error.message.includes(found.entry.path) || error.message.includes(found.spec)
        ? error.message
        : `${found.entry.path}: ${stage}: ${error.message}`;
    this.told.set(`failed:${found.key}`, message);
    process.stderr.write(`probe: ${message}\n`);
    this.log.append({
      event: 'failed',
      checkpoint,
      key: found.key,
      entry: found.entry.path,
      at: new Date().toISOString(),
      fingerprint: found.fingerprint,
      stage,
      message,
      exit_code: error.exitCode,
    });
    this.writeOutputs();
  }

  /** The checkpoint of a found entry, recorded in run.json; undefined where it failed (recorded) or changed meanwhile. */
  private open(found: Found): Checkpoint | undefined {
    try {
      checkEntryTree(found.entry);
      const ckpt = resolveCheckpoint(found.spec, { http: this.run.http, dtype: this.run.dtype, engine: this.run.engine });
      const [record] = checkpointRecords([ckpt]);
      // The content hash read every byte: a checkpoint that changed meanwhile is not complete after all.
      if (fingerprintOf(found.entry) !== found.fingerprint) return undefined;
      this.run.dir.addCheckpoint(record!);
      return ckpt;
    } catch (error) {
      const failure = asFailure(error);
      if (!failure) throw error;
      this.fail(found, found.spec, 'open', failure);
      return undefined;
    }
  }

  private async score(found: Found): Promise<void> {
    const ckpt = this.open(found);
    if (!ckpt) return;
    const cheap = this.log.state(found.key).cheap ?? (await this.cheapRungs(found, ckpt));
    if (!cheap) return;
    const heavy = cheap.heavy.heavy ? await this.heavyRungs(found, ckpt) : { passk: null, asap: null };
    if (!heavy) return;
    this.recordScored(found, ckpt.name, heavy);
    this.finished(cheap);
  }

  /** pass@K and ASAP where asked for; undefined where a rung failed (recorded: the checkpoint is not scored, and is tried again). */
  private async heavyRungs(found: Found, ckpt: Checkpoint): Promise<Pick<ScoredEvent, 'passk' | 'asap'> | undefined> {
    const passk = this.s.n > 0 ? await this.passk(found, ckpt) : null;
    if (passk === undefined) return undefined;
    const asap = this.s.asapRuns > 0 && this.asapTasks.length > 0 ? await this.asap(found, ckpt) : null;
    if (asap === undefined) return undefined;
    return { passk, asap };
  }

  private recordScored(found: Found, checkpoint: string, heavy: Pick<ScoredEvent, 'passk' | 'asap'>): void {
    this.log.append({ event: 'scored', checkpoint, key: found.key, entry: found.entry.path, at: new Date().toISOString(), ...heavy });
  }

  /**
   * A Slurm job's work (`--job`, slurm-dispatch.ts): one checkpoint's stage into this run
   * directory — the cheap rungs (the decision on the others is the watch's, made in training
   * order), or pass@K and ASAP.
   */
  async job(found: Found, stage: JobStage): Promise<WatchOutcome> {
    const ckpt = this.open(found);
    if (ckpt && stage === 'cheap' && !this.log.state(found.key).cheap) await this.cheapRungs(found, ckpt, JOB_DECISION);
    if (ckpt && stage === 'heavy' && !this.log.state(found.key).scored) {
      const heavy = await this.heavyRungs(found, ckpt);
      if (heavy) this.recordScored(found, ckpt.name, heavy);
    }
    await this.passkRun.pools.close();
    return { scored: [], trend: [], failures: this.log.failures(), unreadable: [] };
  }

  private finished(cheap: CheapEvent): void {
    this.scoredNow.push(cheap.checkpoint);
    const point = this.writeOutputs().find((p) => p.checkpoint === cheap.checkpoint);
    const shown = Object.entries(point?.values ?? {})
      .map(([probe, v]) => `${probe} ${formatTrendValue(probe as never, v.value)}`)
      .join(', ');
    const disagree = Object.keys(point?.disagreements ?? {});
    say(
      this.run,
      `watch: ${basename(cheap.entry)} (step ${cheap.step}, ${cheap.series}): ${shown || 'no scores'}${disagree.length ? ` — disagrees with the baseline on ${disagree.join(', ')}` : ''}`,
    );
  }

  private async cheapRungs(found: Found, ckpt: Checkpoint, decided?: HeavyDecision): Promise<CheapEvent | undefined> {
    const { items, dir } = this.run;
    const scores = ckpt.kind !== 'engine' || ENGINE_PROBES[ckpt.engine].scores;
    let results: { code_bpb: BpbResult; bpb: BpbResult; mcq: McqResult } | null = null;
    if (scores) {
      const cheap = await forEachCheckpoint(
        [ckpt],
        runLoopOptions(this.run, `cheap rungs, step ${found.step}`, this.code.length + 2 * items.length),
        async (name, backend, tick) => {
          const scorer = loggedScorer(dir, name, backend, tick);
          return { code_bpb: await scoreCodeBpb(name, this.code, scorer), ...(await scoreBpbAndMcq(name, items, this.s.seed, scorer)) };
        },
      );
      if (cheap.failures.length) {
        this.fail(found, ckpt.name, 'cheap', cheap.failures[0]!);
        return undefined;
      }
      results = cheap.results[0]!;
    }
    const event: CheapEvent = {
      event: 'cheap',
      checkpoint: ckpt.name,
      key: found.key,
      entry: found.entry.path,
      at: new Date().toISOString(),
      step: found.step,
      step_source: found.stepSource,
      series: found.series,
      code_bpb: results?.code_bpb ?? null,
      bpb: results?.bpb ?? null,
      mcq: results?.mcq ?? null,
      ...(scores
        ? {}
        : { cheap_skipped: `${ENGINE_PROBES[(ckpt as { engine: keyof typeof ENGINE_PROBES }).engine].label} returns no prompt log-probs` }),
      heavy: decided ?? this.decide(found.series, results?.bpb.bpb ?? null),
    };
    this.decided(event);
    return event;
  }

  /** The decision on pass@K and ASAP for the next checkpoint of a training run, from those decided before it. */
  private decide(series: string, bpb: number | null): HeavyDecision {
    const before = this.log
      .decidedIn(series)
      .map((c) => ({ checkpoint: basename(c.entry), bpb: c.bpb?.bpb ?? null, heavy: c.heavy.heavy }));
    return decideHeavy(before, { bpb }, this.s.rule);
  }

  /** The rungs past the cheap ones that this watch runs at all (`-n 0`, `--asap-runs 0` leave them out). */
  private heavyRungNames(): string[] {
    return [...(this.s.n > 0 ? ['pass@K'] : []), ...(this.s.asapRuns > 0 && this.asapTasks.length > 0 ? ['ASAP'] : [])];
  }

  private decided(event: CheapEvent): void {
    this.log.append(event);
    // The decision is recorded as the rule made it (later checkpoints count from it); what is said is what will run.
    const rungs = this.heavyRungNames();
    const said =
      event.heavy.heavy && rungs.length
        ? `${rungs.join(' and ')} too — ${event.heavy.reason}`
        : `cheap rungs only — ${rungs.length ? event.heavy.reason : '-n 0 and --asap-runs 0'}`;
    say(this.run, `watch: ${basename(event.entry)}: ${said}`);
  }

  /** pass@K on the checkpoint: its result, or undefined where it failed (recorded). */
  private async passk(found: Found, ckpt: Checkpoint): Promise<PasskResult | null | undefined> {
    const { dir } = this.run;
    if (this.passkRun.items.length === 0) return null;
    const sampled = await forEachCheckpoint(
      [ckpt],
      runLoopOptions(this.run, `pass@k, step ${found.step}`, this.passkRun.items.length),
      (name, backend, tick) => scorePasskRung(name, this.passkRun, this.s, loggedScorer(dir, name, backend, tick)),
    );
    if (sampled.failures.length) {
      this.fail(found, ckpt.name, 'pass@k', sampled.failures[0]!);
      return undefined;
    }
    return sampled.results[0]!;
  }

  /** ASAP episodes of the checkpoint, in the run directory's asap/ (resumed episode by episode). */
  private async asap(found: Found, ckpt: Checkpoint) {
    const { run, s } = this;
    // Without the engine: a watch's ASAP run has never recorded it, and a restarted watch must find its episodes' settings unchanged.
    const outcome = await runAsapRung([ckpt], this.asapTasks, s, { ...run, engine: undefined }, join(run.dir.dir, 'asap'));
    if (outcome.failures.length) {
      this.fail(found, ckpt.name, 'asap', outcome.failures[0]!);
      return undefined;
    }
    return outcome.results[0] ?? null;
  }

  /** results.json and trend.svg as the watch stands (written after every checkpoint, so a report can be made at any time); the trend they hold. */
  writeOutputs(): TrendPoint[] {
    const scores = this.log.scores();
    const trend = trendPoints(scores);
    this.run.dir.writeResults({
      watched: this.s.watched,
      trend,
      rungs: {
        code_bpb: scores.flatMap((x) => (x.code_bpb ? [x.code_bpb] : [])),
        bpb: scores.flatMap((x) => (x.bpb ? [x.bpb] : [])),
        mcq: scores.flatMap((x) => (x.mcq ? [x.mcq] : [])),
        passk: scores.flatMap((x) => (x.passk ? [x.passk] : [])),
        asap: scores.flatMap((x) => (x.asap ? [x.asap] : [])),
      },
      failures: this.log.failures().map((f) => ({ checkpoint: f.checkpoint, entry: f.entry, stage: f.stage, message: f.message })),
    });
    writeFileAtomic(
      join(this.run.dir.dir, 'trend.svg'),
      `${trendChart(`Agentic potential against training step (${basename(this.run.dir.dir)})`, trend)}\n`,
    );
    if (this.s.tensorboard) this.writeTensorboard(trend);
    return trend;
  }

  /** The trend into --tensorboard's events files, one TensorBoard run per training run. */
  private writeTensorboard(trend: TrendPoint[]): void {
    const at = this.log.cheapTimes();
    const settled = settledTrend(trend, this.log.heavyPending());
    const updates = writeTensorboard(this.s.tensorboard!, settled, (p) => Date.parse(at.get(p.checkpoint)!) / 1000);
    for (const [run, update] of updates)
      if (update === 'rewritten')
        // A TensorBoard reading the file keeps its place in the old one: it shows the rewrite once restarted.
        say(
          this.run,
          `watch: rewrote ${join(this.s.tensorboard!, run)}'s events (a point landed before ones written); restart a TensorBoard showing it`,
        );
  }
}

/** A Slurm job of a watch (`--job FILE --job-stage STAGE`): one checkpoint's stage, into the job's run directory. */
export function runWatchJob(run: WatchRun, s: WatchSettings, found: Found, stage: JobStage): Promise<WatchOutcome> {
  return new Watch(run, { ...s, slurm: undefined, tensorboard: undefined }).job(found, stage);
}

/** Runs a watch until it is stopped (or, with `once`, over what is complete now). */
export function runWatch(run: WatchRun, s: WatchSettings): Promise<WatchOutcome> {
  return new Watch(run, s).start();
}
