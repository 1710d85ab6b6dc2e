/**
 * The probe quality report: on the shipped demo set (its numbers checked against the items
 * themselves), on a hand-made set with one leak of each kind next to a clean item, and through
 * the real bin (`probe inspect`, bad input exit 2).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { distinctiveLines, newCode } from '../src/report/new-code.ts';
import { probeQuality, SHORT_OPTION, type ProbeQualityReport } from '../src/report/probe-quality.ts';
import { renderProbeQuality } from '../src/report/probe-quality-text.ts';
import { trajectoryLengths } from '../src/report/trajectory-lengths.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import type { ProbeItem } from '../src/schema/probe-item.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { tempDir } from './helpers/paths.ts';

const DEMO = join(REPO_ROOT, 'probes', 'demo.jsonl');

describe('new code of a gold action, in every form the demo golds write it', () => {
  const golds = new Map(loadProbeItems(DEMO).map((i) => [i.id, i]));
  const code = (id: string) => {
    const item = golds.get(id)!;
    return newCode(item.gold, item.format);
  };

  it('reads sed substitutions (escaped delimiters) and insertions', () => {
    expect(code('shop__pricing-1@mini')).toEqual({
      how: 'sed',
      added: 'return round(total * (1 - discount / 100), 2)',
      removed: 'return round(total - discount, 2)',
    });
    expect(code('api__pagination-5@mini:asap')).toMatchObject({ how: 'sed', added: 'import math\n' });
  });

  it('reads a Python replace by literals and by names bound to literals', () => {
    expect(code('dates-js__add-days-10@mini2')!.added).toBe(
      '    month += 1;\n    if (month > 12) {\n      month = 1;\n      year += 1;\n    }\n',
    );
    const config = code('config__loader-6@mini2')!;
    expect(config.removed).toBe('debug = env.get("APP_DEBUG", "false") == "true"');
    expect(distinctiveLines(config)).toEqual(['debug = env.get("APP_DEBUG", "false").strip().lower() in ("1", "true", "yes", "on")']);
  });

  it('reads heredocs, editor arguments (XML and JSON) and SWE-agent edits', () => {
    expect(code('csv-js__quoted-11@mini')).toMatchObject({ how: 'heredoc', removed: '' });
    expect(code('csv-js__quoted-11@mini')!.added).toMatch(/^export function parseLine\(line\) \{[\s\S]*map\(parseLine\);\n\}$/);
    for (const id of ['orders__dates-4@openhands', 'orders__dates-4@openhands:asap'])
      expect(code(id)).toEqual({ how: 'str_replace', added: 'ISO_DAY = "%Y-%m-%d"', removed: 'ISO_DAY = "%Y-%d-%m"' });
    expect(code('inventory__stock-3@sweagent')).toEqual({
      how: 'edit-range',
      added: '    return [item.sku for item in items if item.quantity <= threshold]',
      removed: '',
    });
  });

  it('names no new code for a command that writes none', () => {
    expect(newCode('<bash>\nls -R\n</bash>', 'md+xml')).toBeNull();
    expect(newCode('<submit/>', 'md+xml')).toBeNull();
  });
});

describe('probe quality of the shipped demo set', () => {
  const items = loadProbeItems(DEMO);
  const report = probeQuality(items, { trajectoryLengths: trajectoryLengths(items, [REPO_ROOT]) });
  const logOf = (item: ProbeItem) => item.distractor_log as Array<{ text: string; source: string; kept: boolean }>;

  it('counts items per format and distractors per source as the items hold them', () => {
    expect(report.formats.reduce((n, f) => n + f.items, 0)).toBe(items.length);
    expect(report.distractors.total).toBe(items.reduce((n, i) => n + i.distractors.length, 0));
    expect(report.distractors.by_source.reduce((n, s) => n + s.distractors, 0)).toBe(report.distractors.total);
    expect(report.distractors.below_minimum).toEqual(items.filter((i) => i.distractors.length < 3).map((i) => i.id));
    const mutations = items.flatMap((i) => logOf(i).filter((r) => r.kept && r.source.startsWith('mutation:')));
    expect(report.distractors.by_source.filter((s) => s.source.startsWith('mutation:')).reduce((n, s) => n + s.distractors, 0)).toBe(
      mutations.length,
    );
  });

  it('finds every earlier trajectory action kept as a distractor verbatim in the context (none, since near-miss distractors), and no gold there', () => {
    // An action of a step before T* is in the context by construction; one after T* is not.
    const earlier = items.map((i) => ({
      id: i.id,
      n: logOf(i).filter(
        (r) => r.kept && /^trajectory:step (\d+)/.test(r.source) && Number(/step (\d+)/.exec(r.source)![1]) < i.decisive_step,
      ).length,
    }));
    const found = new Map(report.leaks.distractor_in_context.map((l) => [l.id, l.distractors.length]));
    for (const { id, n } of earlier) expect(found.get(id) ?? 0, id).toBe(n);
    expect(report.leaks.gold_in_context).toEqual([]);
    // The shipped set's distractors are near misses (edits rejected by the verifier, never an earlier action): nothing to warn of.
    expect(report.leaks.distractor_in_context).toEqual([]);
    expect(report.warnings.map((w) => w.code)).not.toContain('distractor-in-context');
    expect(report.warnings.map((w) => w.code)).not.toContain('non-edit-distractors');
  });

  it('places T* in each trajectory read from its source file', () => {
    expect(report.decisive_step.known_length).toBe(items.length);
    for (const q of report.per_item) {
      const item = items.find((i) => i.id === q.id)!;
      expect(q.trajectory_actions).toBe(importTrajectory(join(REPO_ROOT, item.source.file)).steps.length);
      expect(q.relative_position).toBeGreaterThan(0);
      expect(q.relative_position).toBeLessThanOrEqual(1);
    }
  });

  it('sees each trajectory rendered in two formats as one task in several formats', () => {
    const asapTasks = new Set(items.filter((i) => i.format === 'md+xml').map((i) => i.task));
    expect(report.leaks.tasks_in_several_formats.map((t) => t.task).sort()).toEqual([...asapTasks].sort());
    expect(report.leaks.repeated_tasks).toEqual([]);
  });
});

/** A md+xml item; the fields a test does not name are those of a clean item. */
function item(id: string, fields: Partial<ProbeItem> = {}): ProbeItem {
  // Each item's own file, so that no two items share a gold by accident.
  const gold = `<str_replace_editor command="str_replace" path="shop/${id}.py">\n<old_str>    return price * rate</old_str>\n<new_str>    return round(price * (1 + rate), 2)</new_str>\n</str_replace_editor>`;
  return {
    id,
    task: id,
    format: 'md+xml',
    context: `# Task\n<task>\n${id}: prices leave out the tax.\n</task>\n\n## Thinking\nLook first.\n<bash>\ncat shop/${id}.py\n</bash>\n<observation>\ndef with_tax(price, rate):\n    return price * rate\n</observation>\n\n## Thinking\nAdd the tax to the price.\n`,
    gold,
    distractors: [gold.replace('1 + rate', '1 - rate'), gold.replace(', 2)', ', 1)'), gold.replace('(1 + rate)', '(1 + rate) * 1')],
    distractor_log: [
      { text: gold.replace('1 + rate', '1 - rate'), source: 'mutation:operator', kept: true, reason: 'still failing' },
      { text: gold.replace(', 2)', ', 1)'), source: 'mutation:off-by-one', kept: true, reason: 'still failing' },
      { text: gold.replace('(1 + rate)', '(1 + rate) * 1'), source: 'sample:ckpt/x#3', kept: true, reason: 'still failing' },
    ],
    decisive_step: 1,
    state: { kind: 'patch', base_commit: 'abc', patch: '' },
    source: { file: `trajectories/${id}.traj.json`, format: 'asap' },
    ...fields,
  } as ProbeItem;
}

describe('probe quality of a hand-made set with one leak of each kind', () => {
  const clean = item('clean');
  const goldCopied = item('gold-copied');
  goldCopied.context = `${goldCopied.context}${goldCopied.gold}\n<observation>\nError: file is read-only\n</observation>\n\n## Thinking\nTry again.\n`;
  const codeGiven = item('code-given');
  codeGiven.context = codeGiven.context.replace(
    'prices leave out the tax.',
    'prices leave out the tax; the fix is `return round(price * (1 + rate), 2)`.',
  );
  const distractorCopied = item('distractor-copied');
  const earlierAction = '<bash>\ncat shop/distractor-copied.py\n</bash>';
  distractorCopied.distractors = [...distractorCopied.distractors.slice(0, 2), earlierAction];
  (distractorCopied.distractor_log as unknown[])[2] = {
    text: earlierAction,
    source: 'trajectory:step 0',
    kept: true,
    reason: 'still failing',
  };
  const sameContextA = item('same-context-a', { context: 'one shared context\n' });
  const sameContextB = item('same-context-b', { context: 'one shared context\n' });
  const sameGoldA = item('same-gold-a', { gold: "<bash>\nsed -i 's/a/b/' x.py\n</bash>" });
  const sameGoldB = item('same-gold-b', { gold: "<bash>\nsed -i 's/a/b/' x.py\n</bash>" });
  const taskTwiceA = item('task-twice-a', { task: 'one-task' });
  const taskTwiceB = item('task-twice-b', { task: 'one-task' });
  const fewOptions = item('few-options');
  fewOptions.distractors = fewOptions.distractors.slice(0, 2);
  const submitOption = item('submit-option');
  submitOption.distractors = [...submitOption.distractors.slice(0, 2), '<submit/>'];
  const firstAction = item('first-action', { decisive_step: 0 });
  const set = [
    clean,
    goldCopied,
    codeGiven,
    distractorCopied,
    sameContextA,
    sameContextB,
    sameGoldA,
    sameGoldB,
    taskTwiceA,
    taskTwiceB,
    fewOptions,
    submitOption,
    firstAction,
  ];
  const report: ProbeQualityReport = probeQuality(set);
  const flagged = (code: string) => report.warnings.find((w) => w.code === code)?.items ?? [];

  it('finds each leak on the item that has it', () => {
    expect(report.leaks.gold_in_context).toEqual(['gold-copied']);
    // A copied gold copies its new code too.
    expect(report.leaks.new_code_in_context.map((l) => l.id)).toEqual(['gold-copied', 'code-given']);
    expect(report.leaks.new_code_in_context[1]).toMatchObject({ how: 'str_replace', found: ['return round(price * (1 + rate), 2)'] });
    expect(report.leaks.distractor_in_context).toEqual([
      { id: 'distractor-copied', distractors: [{ index: 2, source: 'trajectory:step 0' }] },
    ]);
    expect(report.leaks.duplicate_contexts).toEqual([['same-context-a', 'same-context-b']]);
    expect(report.leaks.duplicate_golds).toEqual([['same-gold-a', 'same-gold-b']]);
    expect(report.leaks.repeated_tasks).toEqual([{ task: 'one-task', format: 'md+xml', ids: ['task-twice-a', 'task-twice-b'] }]);
    expect(report.distractors.below_minimum).toEqual(['few-options']);
    // Its build searched and found too few (it has a log): the warning points at more candidates, not at --no-distractors.
    expect(report.warnings.find((w) => w.code === 'below-mcq-minimum')!.message).toMatch(
      /1 of them had a distractor search that found too few: rebuild with --distractor-ckpt/,
    );
    expect(flagged('non-edit-distractors')).toEqual(['distractor-copied', 'submit-option']);
    expect(flagged('shorter-distractor')).toEqual(['distractor-copied', 'submit-option']);
    expect(flagged('decisive-first-action')).toEqual(['first-action']);
    // Distractors without a log record are counted, not guessed.
    expect(report.distractors.by_source.find((s) => s.source === 'unlogged')).toMatchObject({ distractors: 1, items: 1 });
  });

  it('finds nothing on the clean item', () => {
    expect(report.per_item.find((q) => q.id === 'clean')).toMatchObject({
      leaks: [],
      non_edit_distractors: 0,
      shorter_distractor: false,
      new_code_in_context: { found: 0, lines: 1 },
    });
    for (const w of report.warnings) expect(w.items, w.code).not.toContain('clean');
    expect(probeQuality([clean]).warnings).toEqual([]);
    expect(renderProbeQuality(probeQuality([clean]), 'clean.jsonl')).toContain('No warnings');
  });

  it("calls a near-miss option short only below the stated share of the gold's bytes", () => {
    const cut = (from: ProbeItem, by: number) => ({
      ...from,
      distractors: [from.gold.slice(0, Math.ceil(SHORT_OPTION * Buffer.byteLength(from.gold)) + by)],
    });
    const justShort = cut(item('just-short'), -1);
    const nearMiss = cut(item('near-miss'), 1);
    expect(probeQuality([justShort, nearMiss]).distractors.shorter_than_gold).toEqual(['just-short']);
  });
});

describe('probe inspect', () => {
  it("prints the report of the demo set, with token lengths under a checkpoint's tokenizer", () => {
    const run = runProbe(['inspect', DEMO, '--json', '--tokenizer', join(REPO_ROOT, 'checkpoints', 'llama-bpe8k-s1500')]);
    expect(run.code, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as ProbeQualityReport;
    const items = loadProbeItems(DEMO);
    expect(printed.items).toBe(items.length);
    expect(printed.decisive_step.known_length).toBe(items.length);
    expect(printed.gold.tokens!.n).toBe(items.length);
    // A BPE tokenizer trained on code spends fewer tokens than bytes on code.
    expect(printed.gold.tokens!.mean!).toBeLessThan(printed.gold.bytes.mean!);
    expect(printed.leaks.distractor_in_context).toEqual([]);
  });

  it('exits 2 naming the file and line of a probe that does not parse', () => {
    const dir = tempDir('probe-inspect-');
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, `${JSON.stringify(item('fine'))}\n{"id": "cut"\n`);
    expectOneLineError(runProbe(['inspect', file]), new RegExp(`^probe: ${file}:2: not valid JSON`));
  });
});
