/**
 * The probe quality report: what a probe set holds and where it could mislead, read before
 * trusting any score computed on it. Items per format, distractors by where they came from,
 * items below the MCQ minimum, gold lengths, where T* falls, and leak checks (text the model
 * could copy from its own context, items that are not independent).
 *
 * A pure function of the items (plus trajectory lengths and a token counter, when the caller
 * has them): no I/O, so `probe build` and `probe inspect` report the same thing.
 */
import { parseActionText } from '../formats/registry.ts';
import { MCQ_MIN_DISTRACTORS, type ProbeItem } from '../schema/probe-item.ts';
import { distinctiveLines, newCode } from './new-code.ts';

/** Five-number summary and mean of a sample; all null when it is empty. */
export interface Distribution {
  n: number;
  min: number | null;
  p25: number | null;
  median: number | null;
  p75: number | null;
  max: number | null;
  mean: number | null;
}

export interface FormatCount {
  format: string;
  items: number;
  tasks: number;
  /** Items with at least the MCQ minimum of distractors. */
  mcq_ready: number;
}

/** Kept distractors of one kind of source: `mutation:<kind>`, `trajectory edit`, `trajectory non-edit`, `sample:<ckpt>`, `unlogged`. */
export interface SourceCount {
  source: string;
  distractors: number;
  items: number;
  /** Of them, how many appear verbatim in their item's context. */
  verbatim_in_context: number;
  /** Of them, how many are not edits (read-only commands, navigation, submit). */
  non_edit: number;
}

export interface NewCodeLeak {
  id: string;
  /** How the gold writes its code (`sed`, `str_replace`, …). */
  how: string;
  /** The gold's distinctive new lines, and those of them found in the context. */
  lines: number;
  found: string[];
}

export interface DistractorLeak {
  id: string;
  distractors: Array<{ index: number; source: string }>;
}

/** Per item, what the report computed, for scripts that want to filter items. */
export interface ItemQuality {
  id: string;
  task: string;
  format: string;
  gold_bytes: number;
  gold_tokens: number | null;
  distractors: number;
  /** Source kind of each kept distractor, in the item's order. */
  sources: string[];
  non_edit_distractors: number;
  /** A distractor has under SHORT_OPTION of the gold's UTF-8 bytes: total log-likelihood favours it. */
  shorter_distractor: boolean;
  decisive_step: number;
  trajectory_actions: number | null;
  /** `decisive_step + 1` over the trajectory's actions: 1.0 means T* is its last action. */
  relative_position: number | null;
  /** The gold's distinctive new lines found in the context / looked for (null: none we can name). */
  new_code_in_context: { found: number; lines: number } | null;
  leaks: string[];
  /** Whether the build searched distractors for it (it has a distractor_log). */
  searched: boolean;
}

export type WarningCode =
  | 'below-mcq-minimum'
  | 'non-edit-distractors'
  | 'shorter-distractor'
  | 'gold-in-context'
  | 'distractor-in-context'
  | 'new-code-in-context'
  | 'duplicate-contexts'
  | 'duplicate-golds'
  | 'repeated-tasks'
  | 'tasks-in-several-formats'
  | 'decisive-first-action'
  | 'no-distractor-log';

export interface QualityWarning {
  code: WarningCode;
  message: string;
  items: string[];
}

export interface ProbeQualityReport {
  items: number;
  tasks: number;
  formats: FormatCount[];
  distractors: {
    total: number;
    mcq_minimum: number;
    per_item: Distribution;
    below_minimum: string[];
    by_source: SourceCount[];
    non_edit: number;
    /** Why they are not edits: `trajectory step that did not edit`, `submit`, `view`, `search`, `navigate`, `read-only command`. */
    non_edit_by_reason: Record<string, number>;
    /** Distractor bytes over gold bytes, every kept distractor. */
    length_ratio: Distribution;
    /** Items with a distractor under `short_option` of the gold's bytes. */
    shorter_than_gold: string[];
    short_option: number;
  };
  gold: {
    bytes: Distribution;
    bytes_by_format: Record<string, Distribution>;
    /** Null unless a tokenizer was given. */
    tokens: Distribution | null;
    tokenizer: string | null;
  };
  decisive_step: {
    absolute: Distribution;
    /** Items whose trajectory length is known. */
    known_length: number;
    relative: Distribution;
    actions_after: Distribution;
    at_first_action: string[];
  };
  leaks: {
    gold_in_context: string[];
    distractor_in_context: DistractorLeak[];
    new_code_in_context: NewCodeLeak[];
    /** Items whose gold writes no code we can name (an arbitrary script): the new-code check did not run on them. */
    new_code_unchecked: string[];
    duplicate_contexts: string[][];
    duplicate_golds: string[][];
    /** One task with several items in the same format (several trajectories of it). */
    repeated_tasks: Array<{ task: string; format: string; ids: string[] }>;
    /** One task with items in several formats (a trajectory rendered more than once, `--context native asap`). */
    tasks_in_several_formats: Array<{ task: string; formats: string[]; ids: string[] }>;
  };
  per_item: ItemQuality[];
  warnings: QualityWarning[];
}

export interface QualityOptions {
  /** Actions in each item's trajectory, by `source.file`, where the caller could read it. */
  trajectoryLengths?: ReadonlyMap<string, number>;
  /** Tokens of a text under the given tokenizer (its name goes in the report). */
  tokens?: { name: string; count: (text: string) => number };
}

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * A distractor with less than this share of the gold's bytes is a short option: a near miss
 * (an operator or a digit changed) stays within a few bytes of the gold, while a `cat` or a
 * `submit` is a fraction of it, and wins on total log-likelihood for that alone.
 */
export const SHORT_OPTION = 0.75;

export function distribution(values: readonly number[]): Distribution {
  if (values.length === 0) return { n: 0, min: null, p25: null, median: null, p75: null, max: null, mean: null };
  const sorted = [...values].sort((a, b) => a - b);
  // Linear interpolation between closest ranks (numpy's default).
  const at = (q: number) => {
    const pos = q * (sorted.length - 1);
    const lo = Math.floor(pos);
    return sorted[lo]! + (sorted[Math.min(lo + 1, sorted.length - 1)]! - sorted[lo]!) * (pos - lo);
  };
  return {
    n: sorted.length,
    min: sorted[0]!,
    p25: at(0.25),
    median: at(0.5),
    p75: at(0.75),
    max: sorted.at(-1)!,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
  };
}

/** The kind of a distractor log `source`: `mutation:operator`, `trajectory edit` / `trajectory non-edit`, `sample:<ckpt>`. */
export function sourceKind(source: string | undefined): string {
  if (source === undefined) return 'unlogged';
  if (source.startsWith('trajectory:')) return /\(edit\)/.test(source) ? 'trajectory edit' : 'trajectory non-edit';
  if (source.startsWith('sample:')) return source.replace(/#\d+$/, '');
  return source;
}

/** Commands that only read: a distractor made of them is not a near miss of an edit. */
const READ_ONLY = /^\s*(cat|ls|grep|rg|find|head|tail|nl|wc|pwd|tree|less|more|file|stat|echo|git\s+(diff|log|status|show))\b[^>]*$/;

/** Why a distractor is not an edit ('' when it is one, or we cannot tell). */
function nonEditReason(text: string, source: string | undefined, item: ProbeItem): string {
  if (source?.startsWith('trajectory:') && !/\(edit\)/.test(source)) return 'trajectory step that did not edit';
  try {
    const action = parseActionText(text, item.format);
    if (action.kind === 'submit') return 'submit';
    if (['view', 'search', 'navigate'].includes(action.kind)) return action.kind;
    const command = typeof action.args.command === 'string' ? action.args.command : '';
    if (action.tool === 'bash' && command.split(/&&|\|\||;|\n/).every((part) => part.trim() === '' || READ_ONLY.test(part)))
      return 'read-only command';
  } catch {
    // Unparsable: the verifier rejected it for that, which is no evidence of what kind it is.
  }
  return '';
}

interface KeptDistractor {
  text: string;
  source: string | undefined;
}

/** Each kept distractor with its log record's source (the log keeps every candidate, kept or not). */
function keptDistractors(item: ProbeItem): KeptDistractor[] {
  const log = Array.isArray(item.distractor_log)
    ? (item.distractor_log as Array<{ text?: unknown; source?: unknown; kept?: unknown }>)
    : [];
  return item.distractors.map((text) => {
    const record = log.find((r) => r.kept !== false && r.text === text && typeof r.source === 'string');
    return { text, source: record?.source as string | undefined };
  });
}

/** Whether a line of code appears in a context, as written or JSON-escaped (tool-call arguments in native OpenHands contexts). */
function inContext(context: string, line: string): boolean {
  return context.includes(line) || context.includes(JSON.stringify(line).slice(1, -1));
}

function groupsOf<T>(items: readonly ProbeItem[], key: (item: ProbeItem) => T): ProbeItem[][] {
  const groups = new Map<T, ProbeItem[]>();
  for (const item of items) {
    const k = key(item);
    groups.set(k, [...(groups.get(k) ?? []), item]);
  }
  return [...groups.values()];
}

export function probeQuality(items: readonly ProbeItem[], options: QualityOptions = {}): ProbeQualityReport {
  const perItem: ItemQuality[] = [];
  const bySource = new Map<string, SourceCount & { itemIds: Set<string> }>();
  const ratios: number[] = [];
  const distractorLeaks: DistractorLeak[] = [];
  const newCodeLeaks: NewCodeLeak[] = [];
  const newCodeUnchecked: string[] = [];
  const nonEditByReason: Record<string, number> = {};
  let unlogged = 0;

  for (const item of items) {
    const goldBytes = utf8Bytes(item.gold);
    const leaks: string[] = [];
    const kept = keptDistractors(item);
    const leaked: DistractorLeak['distractors'] = [];
    let nonEdit = 0;
    kept.forEach((d, index) => {
      const kind = sourceKind(d.source);
      if (!d.source) unlogged++;
      const count = bySource.get(kind) ?? {
        source: kind,
        distractors: 0,
        items: 0,
        verbatim_in_context: 0,
        non_edit: 0,
        itemIds: new Set<string>(),
      };
      count.distractors++;
      count.itemIds.add(item.id);
      const verbatim = d.text.trim() !== '' && item.context.includes(d.text.trim());
      if (verbatim) {
        count.verbatim_in_context++;
        leaked.push({ index, source: d.source ?? 'unlogged' });
      }
      const reason = nonEditReason(d.text, d.source, item);
      if (reason) {
        nonEditByReason[reason] = (nonEditByReason[reason] ?? 0) + 1;
        count.non_edit++;
        nonEdit++;
      }
      bySource.set(kind, count);
      ratios.push(utf8Bytes(d.text) / goldBytes);
    });
    if (leaked.length) {
      distractorLeaks.push({ id: item.id, distractors: leaked });
      leaks.push('distractor-in-context');
    }
    if (item.context.includes(item.gold.trim())) leaks.push('gold-in-context');

    const code = newCode(item.gold, item.format);
    const lines = code ? distinctiveLines(code) : [];
    let newCodeFound: ItemQuality['new_code_in_context'] = null;
    if (!code || lines.length === 0) newCodeUnchecked.push(item.id);
    else {
      const found = lines.filter((l) => inContext(item.context, l));
      newCodeFound = { found: found.length, lines: lines.length };
      // Every new line already there: the fix can be copied. Some of them is normal (a whole-file write keeps unchanged lines).
      if (found.length === lines.length) {
        newCodeLeaks.push({ id: item.id, how: code.how, lines: lines.length, found });
        leaks.push('new-code-in-context');
      }
    }

    const length = options.trajectoryLengths?.get(item.source.file) ?? null;
    perItem.push({
      id: item.id,
      task: item.task,
      format: item.format,
      gold_bytes: goldBytes,
      gold_tokens: options.tokens ? options.tokens.count(item.gold) : null,
      distractors: item.distractors.length,
      sources: kept.map((d) => sourceKind(d.source)),
      non_edit_distractors: nonEdit,
      shorter_distractor: item.distractors.some((d) => utf8Bytes(d) < SHORT_OPTION * goldBytes),
      decisive_step: item.decisive_step,
      trajectory_actions: length,
      relative_position: length ? (item.decisive_step + 1) / length : null,
      new_code_in_context: newCodeFound,
      leaks,
      searched: Array.isArray(item.distractor_log),
    });
  }

  const ids = (list: readonly { id: string }[]) => list.map((i) => i.id);
  const belowMinimum = perItem.filter((i) => i.distractors < MCQ_MIN_DISTRACTORS);
  const duplicateContexts = groupsOf(items, (i) => i.context)
    .filter((g) => g.length > 1)
    .map(ids);
  const duplicateGolds = groupsOf(items, (i) => i.gold)
    .filter((g) => g.length > 1)
    .map(ids);
  const repeatedTasks = groupsOf(items, (i) => `${i.task}\0${i.format}`)
    .filter((g) => g.length > 1)
    .map((g) => ({ task: g[0]!.task, format: g[0]!.format, ids: ids(g) }));
  const severalFormats = groupsOf(items, (i) => i.task)
    .map((g) => ({ task: g[0]!.task, formats: [...new Set(g.map((i) => i.format))].sort(), ids: ids(g) }))
    .filter((t) => t.formats.length > 1);
  for (const group of [...duplicateContexts, ...duplicateGolds])
    for (const id of group) perItem.find((i) => i.id === id)!.leaks.push('duplicate');
  const withLength = perItem.filter((i) => i.trajectory_actions !== null);
  const formats = groupsOf(items, (i) => i.format)
    .map((g) => ({
      format: g[0]!.format,
      items: g.length,
      tasks: new Set(g.map((i) => i.task)).size,
      mcq_ready: g.filter((i) => i.distractors.length >= MCQ_MIN_DISTRACTORS).length,
    }))
    .sort((a, b) => a.format.localeCompare(b.format));

  const report: ProbeQualityReport = {
    items: items.length,
    tasks: new Set(items.map((i) => i.task)).size,
    formats,
    distractors: {
      total: perItem.reduce((n, i) => n + i.distractors, 0),
      mcq_minimum: MCQ_MIN_DISTRACTORS,
      per_item: distribution(perItem.map((i) => i.distractors)),
      below_minimum: ids(belowMinimum),
      by_source: [...bySource.values()]
        .sort((a, b) => b.distractors - a.distractors || a.source.localeCompare(b.source))
        .map(({ itemIds, ...count }) => ({ ...count, items: itemIds.size })),
      non_edit: perItem.reduce((n, i) => n + i.non_edit_distractors, 0),
      non_edit_by_reason: nonEditByReason,
      length_ratio: distribution(ratios),
      shorter_than_gold: ids(perItem.filter((i) => i.shorter_distractor)),
      short_option: SHORT_OPTION,
    },
    gold: {
      bytes: distribution(perItem.map((i) => i.gold_bytes)),
      bytes_by_format: Object.fromEntries(
        formats.map((f) => [f.format, distribution(perItem.filter((i) => i.format === f.format).map((i) => i.gold_bytes))]),
      ),
      tokens: options.tokens ? distribution(perItem.map((i) => i.gold_tokens!)) : null,
      tokenizer: options.tokens?.name ?? null,
    },
    decisive_step: {
      absolute: distribution(perItem.map((i) => i.decisive_step)),
      known_length: withLength.length,
      relative: distribution(withLength.map((i) => i.relative_position!)),
      actions_after: distribution(withLength.map((i) => i.trajectory_actions! - i.decisive_step - 1)),
      at_first_action: ids(perItem.filter((i) => i.decisive_step === 0)),
    },
    leaks: {
      gold_in_context: ids(perItem.filter((i) => i.leaks.includes('gold-in-context'))),
      distractor_in_context: distractorLeaks,
      new_code_in_context: newCodeLeaks,
      new_code_unchecked: newCodeUnchecked,
      duplicate_contexts: duplicateContexts,
      duplicate_golds: duplicateGolds,
      repeated_tasks: repeatedTasks,
      tasks_in_several_formats: severalFormats,
    },
    per_item: perItem,
    warnings: [],
  };
  report.warnings = qualityWarnings(report, unlogged);
  return report;
}

/** What a reader should do about each problem found, worded for someone about to trust a score. */
function qualityWarnings(r: ProbeQualityReport, unlogged: number): QualityWarning[] {
  const warnings: QualityWarning[] = [];
  const add = (code: WarningCode, items: string[], message: string) => {
    if (items.length) warnings.push({ code, message, items });
  };
  const n = r.items;
  const share = (k: number, of = n) => `${k} of ${of}`;
  add(
    'gold-in-context',
    r.leaks.gold_in_context,
    `${share(r.leaks.gold_in_context.length)} items have their gold action verbatim in their own context: BPB there measures copying, not the decisive action. Drop these items, or rebuild them with the context cut before the earlier copy.`,
  );
  add(
    'new-code-in-context',
    r.leaks.new_code_in_context.map((l) => l.id),
    `${share(r.leaks.new_code_in_context.length)} items have every new line their gold writes already in the context (an earlier attempt, the task text or an observation shows the fix): BPB and MCQ on them reward copying. Look at the lines listed per item; leave the items out of rankings if the fix is given away.`,
  );
  const leakedDistractors = r.leaks.distractor_in_context.reduce((k, l) => k + l.distractors.length, 0);
  const leakedBySource = r.distractors.by_source
    .filter((s) => s.verbatim_in_context > 0)
    .map((s) => `${s.verbatim_in_context} ${s.source}`)
    .join(', ');
  add(
    'distractor-in-context',
    r.leaks.distractor_in_context.map((l) => l.id),
    `${leakedDistractors} of ${r.distractors.total} distractors (in ${share(r.leaks.distractor_in_context.length)} items; ${leakedBySource}) appear verbatim in their item's context. A model that copies from its context prefers them for that alone, so MCQ accuracy on these items is biased against the gold. Prefer near-miss distractors (mutations of the gold, --distractor-ckpt samples) and read MCQ's verbatim-option diagnostic next to its accuracy.`,
  );
  add(
    'non-edit-distractors',
    r.per_item.filter((i) => i.non_edit_distractors > 0).map((i) => i.id),
    `${r.distractors.non_edit} of ${r.distractors.total} distractors are not edits (${Object.entries(r.distractors.non_edit_by_reason)
      .map(([why, k]) => `${why}: ${k}`)
      .join(
        ', ',
      )}) while every gold is the fix: they are not near misses, and short ones win on total likelihood. MCQ with them measures a preference for short reads over edits, not the choice of the right fix.`,
  );
  const mcqReady = n - r.distractors.below_minimum.length;
  add(
    'shorter-distractor',
    r.distractors.shorter_than_gold,
    `${share(r.distractors.shorter_than_gold.length)} items have a distractor with under ${Math.round(100 * r.distractors.short_option)}% of the gold's bytes: MCQ \`acc\` (total log-likelihood) favours short options there, so read \`acc_norm\` (per byte) and \`acc_pmi\` before \`acc\`. Distractor/gold length ratio: median ${fmt(r.distractors.length_ratio.median)}, range ${fmt(r.distractors.length_ratio.min)}–${fmt(r.distractors.length_ratio.max)}.`,
  );
  const below = r.distractors.below_minimum.length;
  const searched = r.per_item.filter((i) => r.distractors.below_minimum.includes(i.id) && i.searched).length;
  add(
    'below-mcq-minimum',
    r.distractors.below_minimum,
    [
      `${share(below)} items have fewer than ${r.distractors.mcq_minimum} distractors (${mcqReady} MCQ-ready): with fewer options chance accuracy is higher and items are not comparable.`,
      mcqReady ? 'Score MCQ on the MCQ-ready items only.' : 'No item here has enough options for MCQ.',
      searched
        ? `${searched} of them had a distractor search that found too few: rebuild with --distractor-ckpt to offer sampled candidates.`
        : '',
      below > searched
        ? `${below - searched} of them record no distractor search (no distractor_log: built with --no-distractors, or not by \`probe build\`): rebuild them without --no-distractors.`
        : '',
    ]
      .filter(Boolean)
      .join(' '),
  );
  add(
    'duplicate-contexts',
    r.leaks.duplicate_contexts.flat(),
    `${r.leaks.duplicate_contexts.length} contexts are shared by several items: those items are not independent, so per-item bootstrap intervals are too narrow. Keep one item per context.`,
  );
  add(
    'duplicate-golds',
    r.leaks.duplicate_golds.flat(),
    `${r.leaks.duplicate_golds.length} gold actions are shared by several items: the same answer is scored more than once. Keep one, or check that the items really differ.`,
  );
  add(
    'repeated-tasks',
    r.leaks.repeated_tasks.flatMap((t) => t.ids),
    `${r.leaks.repeated_tasks.length} tasks have several items in the same format (several trajectories of one task): those tasks weigh more in a pooled score and their items are correlated. Compare per-task averages, or bootstrap over tasks rather than items.`,
  );
  add(
    'tasks-in-several-formats',
    r.leaks.tasks_in_several_formats.flatMap((t) => t.ids),
    `${r.leaks.tasks_in_several_formats.length} of ${r.tasks} tasks have items in several formats (one trajectory rendered more than once): a score over the whole set counts those tasks once per rendering, and their items are not independent. Score each format on its own, or average per task first.`,
  );
  add(
    'decisive-first-action',
    r.decisive_step.at_first_action,
    `${share(r.decisive_step.at_first_action.length)} items have T* at the trajectory's first action: the context holds only the task, so the probe measures a cold fix without the exploration the other items show. Report them separately if their share differs between probe sets.`,
  );
  if (unlogged > 0) {
    warnings.push({
      code: 'no-distractor-log',
      items: r.per_item.filter((i) => i.sources.includes('unlogged')).map((i) => i.id),
      message: `${unlogged} of ${r.distractors.total} distractors have no distractor_log record: where they came from (and whether the verifier rejected them) is not recorded. Rebuild with a current \`probe build\` to log them.`,
    });
  }
  return warnings;
}

export function fmt(v: number | null, digits = 2): string {
  return v === null ? '-' : Number.isInteger(v) ? String(v) : v.toFixed(digits);
}
