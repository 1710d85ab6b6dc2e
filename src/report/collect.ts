/**
 * Reads finished run directories (any verb) into one report: per-probe results, the
 * ladder's shortlist, the probe items behind them and where ASAP transcripts are.
 */
import { existsSync } from 'node:fs';
import type { z } from 'zod';
import { basename, isAbsolute, join, resolve } from 'node:path';
import type { AsapResult } from '../swe/run.ts';
import type { EnvironmentDeclaration, EnvironmentResult } from '../asap/environment.ts';
import { ENVIRONMENTS } from '../environments/registry.ts';
import { AsapStore, checkpointKey } from '../swe/store.ts';
import { InputError } from '../errors.ts';
import type { AptResult } from '../probes/aptbench.ts';
import type { BpbResult } from '../probes/bpb.ts';
import { loadProbeItems } from '../probes/load.ts';
import { rankingAccuracy, type McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { ReportedManifestSchema } from '../schema/run-manifest.ts';
import { readRecordFile } from '../store/read-record.ts';
import { probeSetRecord } from '../store/run-dir.ts';
import { readResults } from './results-schema.ts';
import type { LadderRow } from '../schema/ladder-row.ts';
import type { TrendPoint } from './trend.ts';
import { idFileName } from '../util/file-name.ts';
import { MAX_STRING_BYTES, readTextFile, regularFile } from '../util/safe-tree.ts';

/** The MCQ accuracy a ladder row is ranked and shown by (`rankingAccuracy`: acc_norm). */
export function ladderMcqAccuracy(r: Pick<LadderRow, 'mcq_acc' | 'mcq_acc_norm'>): number {
  return rankingAccuracy({ acc: r.mcq_acc, acc_norm: r.mcq_acc_norm });
}

export interface ReportRun {
  dir: string;
  verb: string;
  manifest: ReportedManifest | null;
}

/** run.json as a report has it: the verb, and what else the run recorded (runs.json of hand or older runs may lack fields). */
export type ReportedManifest = z.infer<typeof ReportedManifestSchema>;

export interface ReportData {
  runs: ReportRun[];
  bpb: BpbResult[];
  mcq: McqResult[];
  passk: PasskResult[];
  asap: AsapResult[];
  /**
   * The episodes of the other registered environments (`probe asap --env NAME`, the ladder's
   * `--asap-env NAME`), by name; with their transcripts' files where the environment has the
   * report link them (`transcriptsOf`).
   */
  episodes: Record<string, EnvironmentReport[]>;
  aptbench: AptResult[];
  /** Each probe against training step (`probe watch` runs). */
  trend: TrendPoint[];
  ladder: { rows: LadderRow[]; shortlist: string[] } | null;
  /** The probe items the results refer to, by id (for the drill-down). */
  items: Map<string, ProbeItem>;
  /** Checkpoints the runs recorded as controls (by name and by path): labelled everywhere, left out of correlations. */
  controls: Set<string>;
  /**
   * Files of the run directories the report does not read, with why: not a regular file,
   * or a link (or a linked directory) leading out of its run directory. Keyed by the path
   * the run would have written; the report shows the reason in the file's place.
   */
  leftOut?: Map<string, string>;
}

/**
 * A file the run directory `root` holds, as the report may read it: its real path when it
 * is a regular file whose real path (links resolved) is inside `root`; undefined when
 * there is nothing at `file`; otherwise the reason it is left out, recorded in `leftOut`.
 * A run directory is not trusted to stay inside itself: a transcript replaced by a link
 * to a host file must not bring that file into the HTML.
 */
function runFile(root: string, file: string, leftOut: Map<string, string>): string | undefined {
  try {
    return regularFile(file, { root, maxBytes: MAX_STRING_BYTES, what: 'the run directory' });
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    leftOut.set(file, error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message);
    return undefined;
  }
}

/** A JSON file of the run directory `root`: a regular file really inside it (see `runFile`), else an InputError naming it. */
function readJson<T>(file: string, what: string, root: string): T {
  if (!existsSync(file)) throw new InputError({ file }, `missing: ${what}`);
  const text = readTextFile(file, { root, maxBytes: MAX_STRING_BYTES, what: 'the run directory' });
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new InputError({ file }, `not JSON (${what})`, { cause: error });
  }
}

function readJsonIf<T>(file: string, root: string): T | undefined {
  return existsSync(file) ? readJson<T>(file, 'results', root) : undefined;
}

/**
 * The probe items a run used, for the drill-down: its probe set (a copy inside the run
 * directory first, then where run.json says it was), accepted only if its first items
 * hash to the run's probe-set hash — another file of the same name is not shown.
 */
function probeItemsOf(dir: string, manifest: ReportedManifest | null): ProbeItem[] {
  const set = manifest?.probe_set;
  if (!set?.source || manifest?.verb === 'asap' || manifest?.verb === 'aptbench') return [];
  const source = set.source;
  const candidates = [join(dir, basename(source)), ...(isAbsolute(source) ? [source] : [resolve(source), resolve(dir, source)])];
  for (const candidate of candidates.filter((c) => existsSync(c))) {
    let items: ProbeItem[];
    try {
      items = loadProbeItems(candidate);
    } catch {
      continue; // not a probe set: look further
    }
    if (probeSetRecord(source, items.slice(0, set.items)).sha256 === set.sha256) return items.slice(0, set.items);
  }
  return [];
}

export interface EnvironmentReport extends EnvironmentResult {
  /** Per instance, its runs' transcripts (episodes/<checkpoint>/<instance>/run-N.md) that exist, where the environment links them. */
  transcripts?: Record<string, string[]>;
}

/**
 * An environment's results as the report has them: with the transcripts the run wrote for
 * them, where the environment has the report link them (a transcript left out is kept by
 * its path, for its reason).
 */
function environmentReports(
  env: EnvironmentDeclaration<EnvironmentResult>,
  dir: string,
  results: EnvironmentResult[],
  leftOut: Map<string, string>,
): EnvironmentReport[] {
  const transcriptsOf = env.episodes?.transcriptsOf;
  if (!transcriptsOf) return results;
  return results.map((r) => ({
    ...r,
    transcripts: Object.fromEntries(
      ((r as unknown as { items: Record<string, unknown>[] }).items ?? [])
        .map(transcriptsOf)
        .map(({ instance, runs }) => [
          instance,
          Array.from({ length: runs }, (_, run) =>
            join(dir, 'episodes', checkpointKey(r.checkpoint), idFileName(instance), `run-${run}.md`),
          ).flatMap((f) => runFile(dir, f, leftOut) ?? (leftOut.has(f) ? [f] : [])),
        ]),
    ),
  }));
}

/** The registered environment whose `probe asap --env NAME` wrote `results` (none: SWE's, whose results name no environment). */
function otherEnvironmentOf(results: unknown): EnvironmentDeclaration<EnvironmentResult> | undefined {
  const env = (results as { env?: unknown } | null)?.env;
  return ENVIRONMENTS.find((e) => e.episodes && e.name === env);
}

/**
 * Transcript paths from where the episodes are in the run directory now, not from the
 * paths recorded when it ran: a moved directory still reports, and a report never reads
 * a file outside the runs it was given (`runFile`: links resolved, regular files only).
 */
function withTranscriptsIn(asapDir: string, results: AsapResult[], leftOut: Map<string, string>): AsapResult[] {
  const store = new AsapStore(asapDir);
  const inside = (file: string) => runFile(asapDir, file, leftOut) ?? (leftOut.has(file) ? file : '');
  return results.map((r) => ({
    ...r,
    items: r.items.map((item) => ({
      ...item,
      runs: item.runs.map((run) => ({
        ...run,
        transcript: inside(store.episodeFile(r.checkpoint, String(item.instance), Number(run.run), 'md')),
      })),
    })),
  }));
}

export function collectRuns(dirs: string[]): ReportData {
  const data: ReportData = {
    runs: [],
    bpb: [],
    mcq: [],
    passk: [],
    asap: [],
    episodes: {},
    aptbench: [],
    trend: [],
    ladder: null,
    items: new Map(),
    controls: new Set(),
    leftOut: new Map(),
  };
  const leftOut = data.leftOut!;
  for (const dir of dirs) {
    const manifestFile = join(dir, 'run.json');
    const manifest = existsSync(manifestFile)
      ? readRecordFile(manifestFile, ReportedManifestSchema, { root: dir, what: 'a run manifest (run.json)' })
      : null;
    // An ASAP directory from before run.json existed still says what it is.
    const verb = manifest?.verb ?? (existsSync(join(dir, 'asap.json')) ? 'asap' : undefined);
    if (!verb) throw new InputError({ file: manifestFile }, 'not a run directory (no run.json): give directories written with --out');
    const resultsFile = join(dir, 'results.json');
    if (!existsSync(resultsFile))
      throw new InputError({ file: resultsFile }, 'the run has not finished: continue it with --resume, then report');
    const results = readJson<unknown>(resultsFile, 'results', dir);
    switch (verb) {
      case 'bpb':
        data.bpb.push(...readResults.bpb(results, resultsFile).results);
        break;
      case 'mcq':
        data.mcq.push(...readResults.mcq(results, resultsFile).results);
        break;
      case 'passk':
        data.passk.push(...readResults.passk(results, resultsFile).results);
        break;
      case 'asap': {
        const env = otherEnvironmentOf(results);
        if (env) addEpisodes(data, env, environmentReports(env, dir, readResults.environment(env)(results, resultsFile).results, leftOut));
        else data.asap.push(...withTranscriptsIn(dir, readResults.asap(results, resultsFile).results, leftOut));
        break;
      }
      case 'screen':
      case 'demo': {
        const ladder = readResults.ladder(results, resultsFile);
        const stage = <T>(read: (value: unknown, file: string) => T, file: string): T | undefined => {
          const value = readJsonIf<unknown>(file, dir);
          return value === undefined ? undefined : read(value, file);
        };
        const cheap = stage(readResults.cheap, join(dir, 'cheap.json'));
        data.bpb.push(...(cheap?.bpb ?? []));
        data.mcq.push(...(cheap?.mcq ?? []));
        data.passk.push(...(stage(readResults.passkStage, join(dir, 'passk.json'))?.passk ?? []));
        data.asap.push(
          ...withTranscriptsIn(join(dir, 'asap'), stage(readResults.asapStage, join(dir, 'asap', 'results.json'))?.results ?? [], leftOut),
        );
        // The other environment kinds of the shortlist's ASAP (--asap-env), in their own run directories.
        for (const env of ENVIRONMENTS.filter((e) => e.episodes)) {
          const envDir = join(dir, `asap-${env.name}`);
          const ran = stage(readResults.environment(env), join(envDir, 'results.json'))?.results ?? [];
          addEpisodes(data, env, environmentReports(env, envDir, ran, leftOut));
        }
        data.ladder = { rows: ladder.results, shortlist: ladder.shortlist };
        break;
      }
      case 'aptbench':
        data.aptbench.push(...readResults.aptbench(results, resultsFile).results);
        break;
      case 'validate': {
        const { rungs } = readResults.study(results, resultsFile);
        data.bpb.push(...rungs.bpb);
        data.mcq.push(...rungs.mcq);
        data.passk.push(...rungs.passk);
        data.asap.push(...withTranscriptsIn(join(dir, 'asap'), rungs.asap, leftOut));
        break;
      }
      case 'watch': {
        const { trend, rungs } = readResults.watch(results, resultsFile);
        data.trend.push(...trend);
        data.bpb.push(...rungs.bpb);
        data.mcq.push(...rungs.mcq);
        data.passk.push(...rungs.passk);
        data.asap.push(...withTranscriptsIn(join(dir, 'asap'), rungs.asap, leftOut));
        break;
      }
      default:
        throw new InputError({ file: manifestFile, field: 'verb' }, `unknown verb ${JSON.stringify(verb)}`);
    }
    for (const item of probeItemsOf(dir, manifest)) data.items.set(item.id, item);
    for (const c of manifest?.checkpoints ?? [])
      if (c.control) {
        data.controls.add(c.name);
        if (c.path !== undefined) data.controls.add(c.path); // runs from before checkpoints had a path
      }
    for (const r of data.ladder?.rows ?? []) if (r.control) data.controls.add(r.checkpoint);
    data.runs.push({ dir, verb, manifest });
  }
  return data;
}

function addEpisodes(data: ReportData, env: EnvironmentDeclaration<EnvironmentResult>, results: EnvironmentReport[]): void {
  if (results.length) (data.episodes[env.name] ??= []).push(...results);
}

/** An environment's results in the report's data (none where the runs hold none): SWE's under `asap`, the others' by name. */
export function environmentResults(data: ReportData, env: EnvironmentDeclaration<EnvironmentResult>): readonly EnvironmentReport[] {
  return env.episodes ? (data.episodes[env.name] ?? []) : (data.asap as unknown as EnvironmentReport[]);
}
