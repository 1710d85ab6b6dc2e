/** The probe quality report as text for the terminal: tables first, then what to do about each warning. */
import { fmt, type Distribution, type ProbeQualityReport } from './probe-quality.ts';
import { formatTable } from './table.ts';

const HEADERS = ['n', 'min', 'p25', 'median', 'p75', 'max', 'mean'];
const distRow = (label: string, d: Distribution, digits = 2) => [
  label,
  String(d.n),
  ...[d.min, d.p25, d.median, d.p75, d.max, d.mean].map((v) => fmt(v, digits)),
];
const RIGHT = [1, 2, 3, 4, 5, 6, 7];

/** At most `max` ids, then how many more: a warning stays readable on a set of thousands. */
function listIds(ids: readonly string[], max = 6): string {
  return ids.length <= max ? ids.join(', ') : `${ids.slice(0, max).join(', ')} … and ${ids.length - max} more (--json lists all)`;
}

function clip(text: string, max = 90): string {
  const one = text.replace(/\s+/g, ' ');
  return one.length <= max ? one : `${one.slice(0, max - 1)}…`;
}

export function renderProbeQuality(r: ProbeQualityReport, name: string): string {
  const out: string[] = [];
  const d = r.distractors;
  out.push(
    `Probe quality: ${name} — ${r.items} items, ${r.tasks} tasks, ${r.formats.length} format${r.formats.length === 1 ? '' : 's'}`,
    '',
  );

  out.push(
    'Items per format',
    formatTable(
      ['format', 'items', 'tasks', `mcq-ready (≥${d.mcq_minimum} distractors)`],
      r.formats.map((f) => [f.format, String(f.items), String(f.tasks), String(f.mcq_ready)]),
      [1, 2, 3],
    ),
    '',
  );

  out.push(
    `Distractors: ${d.total} kept, per item ${fmt(d.per_item.min)}–${fmt(d.per_item.max)} (median ${fmt(d.per_item.median)}); ${d.below_minimum.length} items below the MCQ minimum of ${d.mcq_minimum}`,
  );
  if (d.by_source.length) {
    out.push(
      formatTable(
        ['source', 'distractors', 'items', 'verbatim in context', 'not an edit'],
        d.by_source.map((s) => [s.source, String(s.distractors), String(s.items), String(s.verbatim_in_context), String(s.non_edit)]),
        [1, 2, 3, 4],
      ),
    );
  }
  out.push(
    `Distractor/gold length (bytes): median ratio ${fmt(d.length_ratio.median)}, range ${fmt(d.length_ratio.min)}–${fmt(d.length_ratio.max)}; ${d.shorter_than_gold.length} of ${r.items} items have a distractor under ${Math.round(100 * d.short_option)}% of the gold's bytes`,
    '',
  );

  out.push(
    'Gold length',
    formatTable(
      ['', ...HEADERS],
      [
        distRow('bytes (all)', r.gold.bytes, 0),
        ...Object.entries(r.gold.bytes_by_format).map(([format, dist]) => distRow(`bytes (${format})`, dist, 0)),
        ...(r.gold.tokens ? [distRow(`tokens (${r.gold.tokenizer})`, r.gold.tokens, 0)] : []),
      ],
      RIGHT,
    ),
    '',
  );

  const t = r.decisive_step;
  out.push(
    "T* (decisive_step: 0-based index among the trajectory's actions)",
    formatTable(
      ['', ...HEADERS],
      [
        distRow('absolute', t.absolute, 1),
        ...(t.known_length
          ? [distRow('relative ((T*+1)/actions; 1 = last)', t.relative), distRow('actions after T*', t.actions_after, 1)]
          : []),
      ],
      RIGHT,
    ),
  );
  if (t.known_length < r.items)
    out.push(
      `trajectory length known for ${t.known_length} of ${r.items} items (read from the file each item's source.file names; --trajectories-root says where they start)`,
    );
  out.push('');

  const l = r.leaks;
  out.push(
    'Leak checks',
    formatTable(
      ['check', 'items', 'what it means'],
      [
        ['gold verbatim in its context', String(l.gold_in_context.length), 'the answer can be copied'],
        ['distractor verbatim in its context', String(l.distractor_in_context.length), 'an option can be copied'],
        [
          "gold's new code already in context",
          String(l.new_code_in_context.length),
          `every new line the fix writes is there (${r.items - l.new_code_unchecked.length} items checked)`,
        ],
        ['duplicate contexts', String(l.duplicate_contexts.flat().length), 'items are not independent'],
        ['duplicate golds', String(l.duplicate_golds.flat().length), 'one answer scored twice'],
        ['task in several items of one format', String(l.repeated_tasks.flatMap((x) => x.ids).length), 'tasks weigh unequally'],
        [
          'task in several formats',
          String(l.tasks_in_several_formats.flatMap((x) => x.ids).length),
          'one trajectory counted once per rendering',
        ],
      ],
      [1],
    ),
  );
  if (l.new_code_unchecked.length)
    out.push(
      `new-code check not run on ${l.new_code_unchecked.length} items whose gold writes no code we can name (a script, not an edit form): ${listIds(l.new_code_unchecked)}`,
    );
  for (const leak of l.new_code_in_context)
    out.push(
      `  ${leak.id} (${leak.how}): ${leak.found
        .slice(0, 2)
        .map((line) => `"${clip(line, 70)}"`)
        .join(', ')}${leak.found.length > 2 ? ` and ${leak.found.length - 2} more lines` : ''}`,
    );
  out.push('');

  if (r.items === 0) out.push('No probe items: there is nothing to score.');
  else if (r.warnings.length === 0) out.push('No warnings: none of the checks above found a problem.');
  else {
    out.push(`Warnings (${r.warnings.length})`);
    for (const w of r.warnings) out.push(`- [${w.code}] ${w.message}`, `    items: ${listIds(w.items)}`);
  }
  return `${out.join('\n')}\n`;
}

/** Three lines for the end of `probe build`: the counts a reader checks first, and where the full report is. */
export function summarizeProbeQuality(r: ProbeQualityReport, reportFile: string): string {
  const d = r.distractors;
  const leaks = [
    [r.leaks.gold_in_context.length, 'gold in context'],
    [r.leaks.new_code_in_context.length, 'new code in context'],
    [r.leaks.distractor_in_context.length, 'distractor in context'],
    [r.leaks.duplicate_contexts.flat().length + r.leaks.duplicate_golds.flat().length, 'duplicates'],
  ]
    .map(([k, what]) => `${k} ${what}`)
    .join(', ');
  return `${[
    `quality: ${d.total} distractors (${d.non_edit} not an edit), ${d.below_minimum.length} of ${r.items} items below the MCQ minimum of ${d.mcq_minimum}; gold median ${fmt(r.gold.bytes.median, 0)} bytes; T* median step ${fmt(r.decisive_step.absolute.median, 1)}`,
    `quality: items with leaks: ${leaks}`,
    ...(d.below_minimum.length
      ? [
          `quality: probe mcq leaves out the ${d.below_minimum.length} item${d.below_minimum.length === 1 ? '' : 's'} with fewer than ${d.mcq_minimum} distractors; --distractor-ckpt DIR adds candidates sampled from a checkpoint at T* (the verifier keeps those it rejects)`,
        ]
      : []),
    `quality: ${r.warnings.length} warning${r.warnings.length === 1 ? '' : 's'}${r.warnings.length ? ` (${r.warnings.map((w) => w.code).join(', ')})` : ''} → ${reportFile}; \`probe inspect\` on the probe file explains them`,
  ].join('\n')}\n`;
}
