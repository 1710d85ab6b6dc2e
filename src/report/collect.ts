/**
 * Reads finished run directories (any verb) into one report: per-probe results, the
 * ladder's shortlist, the probe items behind them and where ASAP transcripts are.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, isAbsolute, join, resolve, sep } from 'node:path';
import type { AsapResult } from '../asap/run.ts';
import type { ResearchResult } from '../research/run.ts';
import type { TerminalResult } from '../terminal/run.ts';
import { AsapStore, checkpointKey } from '../asap/store.ts';
import { InputError } from '../errors.ts';
import type { AptResult } from '../probes/aptbench.ts';
import type { BpbResult } from '../probes/bpb.ts';
import { loadProbeItems } from '../probes/load.ts';
import { rankingAccuracy, type McqResult } from '../probes/mcq.ts';
import type { PasskResult } from '../probes/passk.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import { probeSetRecord, type RunManifest } from '../store/run-dir.ts';
import { readResults } from './results-schema.ts';
import type { LadderRow } from '../schema/ladder-row.ts';
import { idFileName } from '../util/file-name.ts';

/** The MCQ accuracy a ladder row is ranked and shown by (`rankingAccuracy`: acc_norm). */
export function ladderMcqAccuracy(r: Pick<LadderRow, 'mcq_acc' | 'mcq_acc_norm'>): number {
  return rankingAccuracy({ acc: r.mcq_acc, acc_norm: r.mcq_acc_norm });
}

export interface ReportRun {
  dir: string;
  verb: string;
  manifest: RunManifest | null;
}

export interface ReportData {
  runs: ReportRun[];
  bpb: BpbResult[];
  mcq: McqResult[];
  passk: PasskResult[];
  asap: AsapResult[];
  /** Deep-research episodes (`probe asap --env research`). */
  research: ResearchResult[];
  /** Terminal-Bench episodes (`probe asap --env terminal`), with their transcripts' files. */
  terminal: TerminalReport[];
  aptbench: AptResult[];
  ladder: { rows: LadderRow[]; shortlist: string[] } | null;
  /** The probe items the results refer to, by id (for the drill-down). */
  items: Map<string, ProbeItem>;
  /** Checkpoints the runs recorded as controls (by name and by path): labelled everywhere, left out of correlations. */
  controls: Set<string>;
}

function readJson<T>(file: string, what: string): T {
  if (!existsSync(file)) throw new InputError({ file }, `missing: ${what}`);
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch (error) {
    throw new InputError({ file }, `not JSON (${what})`, { cause: error });
  }
}

function readJsonIf<T>(file: string): T | undefined {
  return existsSync(file) ? readJson<T>(file, 'results') : undefined;
}

/**
 * The probe items a run used, for the drill-down: its probe set (a copy inside the run
 * directory first, then where run.json says it was), accepted only if its first items
 * hash to the run's probe-set hash — another file of the same name is not shown.
 */
function probeItemsOf(dir: string, manifest: RunManifest | null): ProbeItem[] {
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

export interface TerminalReport extends TerminalResult {
  /** Per task, its runs' transcripts (episodes/<checkpoint>/<task>/run-N.md) that exist. */
  transcripts: Record<string, string[]>;
}

/** Terminal results with the transcripts the run wrote for them. */
function terminalTranscripts(dir: string, results: TerminalResult[]): TerminalReport[] {
  return results.map((r) => ({
    ...r,
    transcripts: Object.fromEntries(
      r.items.map((item) => [
        item.task_id,
        Array.from({ length: item.n }, (_, run) =>
          join(dir, 'episodes', checkpointKey(r.checkpoint), idFileName(item.task_id), `run-${run}.md`),
        ).filter((f) => existsSync(f)),
      ]),
    ),
  }));
}

/**
 * Transcript paths from where the episodes are in the run directory now, not from the
 * paths recorded when it ran: a moved directory still reports, and a report never reads
 * a file outside the runs it was given.
 */
function withTranscriptsIn(asapDir: string, results: AsapResult[]): AsapResult[] {
  const store = new AsapStore(asapDir);
  const root = resolve(asapDir) + sep;
  const inside = (file: string) => (resolve(file).startsWith(root) ? file : '');
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
    research: [],
    terminal: [],
    aptbench: [],
    ladder: null,
    items: new Map(),
    controls: new Set(),
  };
  for (const dir of dirs) {
    const manifestFile = join(dir, 'run.json');
    const manifest = existsSync(manifestFile) ? readJson<RunManifest>(manifestFile, 'run manifest') : null;
    // An ASAP directory from before run.json existed still says what it is.
    const verb = manifest?.verb ?? (existsSync(join(dir, 'asap.json')) ? 'asap' : undefined);
    if (!verb) throw new InputError({ file: manifestFile }, 'not a run directory (no run.json): give directories written with --out');
    const resultsFile = join(dir, 'results.json');
    if (!existsSync(resultsFile))
      throw new InputError({ file: resultsFile }, 'the run has not finished: continue it with --resume, then report');
    const results = readJson<unknown>(resultsFile, 'results');
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
      case 'asap':
        if ((results as { env?: unknown } | null)?.env === 'research')
          data.research.push(...readResults.research(results, resultsFile).results);
        else if ((results as { env?: unknown } | null)?.env === 'terminal')
          data.terminal.push(...terminalTranscripts(dir, readResults.terminal(results, resultsFile).results));
        else data.asap.push(...withTranscriptsIn(dir, readResults.asap(results, resultsFile).results));
        break;
      case 'screen':
      case 'demo': {
        const ladder = readResults.ladder(results, resultsFile);
        const stage = <T>(read: (value: unknown, file: string) => T, file: string): T | undefined => {
          const value = readJsonIf<unknown>(file);
          return value === undefined ? undefined : read(value, file);
        };
        const cheap = stage(readResults.cheap, join(dir, 'cheap.json'));
        data.bpb.push(...(cheap?.bpb ?? []));
        data.mcq.push(...(cheap?.mcq ?? []));
        data.passk.push(...(stage(readResults.passkStage, join(dir, 'passk.json'))?.passk ?? []));
        data.asap.push(
          ...withTranscriptsIn(join(dir, 'asap'), stage(readResults.asapStage, join(dir, 'asap', 'results.json'))?.results ?? []),
        );
        // The other environment kinds of the shortlist's ASAP (--asap-env), in their own run directories.
        const terminalDir = join(dir, 'asap-terminal');
        data.terminal.push(
          ...terminalTranscripts(terminalDir, stage(readResults.terminal, join(terminalDir, 'results.json'))?.results ?? []),
        );
        data.research.push(...(stage(readResults.research, join(dir, 'asap-research', 'results.json'))?.results ?? []));
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
        data.asap.push(...withTranscriptsIn(join(dir, 'asap'), rungs.asap));
        break;
      }
      default:
        throw new InputError({ file: manifestFile, field: 'verb' }, `unknown verb ${JSON.stringify(verb)}`);
    }
    for (const item of probeItemsOf(dir, manifest)) data.items.set(item.id, item);
    for (const c of manifest?.checkpoints ?? [])
      if (c.control) {
        data.controls.add(c.name);
        data.controls.add(c.path);
      }
    for (const r of data.ladder?.rows ?? []) if (r.control) data.controls.add(r.checkpoint);
    data.runs.push({ dir, verb, manifest });
  }
  return data;
}
