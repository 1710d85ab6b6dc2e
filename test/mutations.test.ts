/** Gold-action mutations and tree-based change detection, on the real held-out synthetic fixes. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { mutateAction, writableRegion } from '../src/replay/mutations.ts';
import { changedFiles } from '../src/replay/tree-change.ts';
import { renderAction } from '../src/formats/md-xml.ts';
import { importTrajectory } from '../src/trajectories/import.ts';
import { toMdXml } from '../src/formats/md-xml-format.ts';

const HELDOUT = join(REPO_ROOT, '..', 'shared', 'synth', 'heldout-a');
const manifest = existsSync(HELDOUT)
  ? readFileSync(join(HELDOUT, 'manifest.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { instance_id: string; fix_step: number; fix_style: string })
  : [];

/** Each task's fix, as a probe item's gold: the md+xml transcript's, and the mini-swe-agent one's as written. */
const golds = manifest.flatMap((t) => {
  const md = importTrajectory(join(HELDOUT, 'trajectories', `${t.instance_id}.asap.md`));
  const mini = importTrajectory(join(HELDOUT, 'trajectories', `${t.instance_id}.mini.traj.json`));
  return [
    { id: `${t.instance_id}.md`, style: t.fix_style, gold: renderAction(toMdXml(md.steps[t.fix_step]!.action)) },
    { id: `${t.instance_id}.mini`, style: t.fix_style, gold: mini.steps[t.fix_step]!.action.text.replace(/\n+$/, '') },
  ];
});

describe('writableRegion', () => {
  it('finds the new code of a sed with a line address, a here-doc .replace and a str_replace', () => {
    const region = (text: string) => text.slice(...writableRegion(text));
    expect(region("<bash>\nsed -i '6s#if calories > threshold:#if calories >= threshold:#' gym/sessions.py\n</bash>")).toBe(
      'if calories >= threshold:',
    );
    expect(region("```bash\npython3 - <<'EOF'\np.write_text(src.replace('raw.strip()', 'float(raw.strip())', 1))\nEOF\n```")).toBe(
      'float(raw.strip())',
    );
    expect(
      region(
        '<str_replace_editor command="str_replace" path="a.py">\n<old_str>x = 1</old_str>\n<new_str>x = 2</new_str>\n</str_replace_editor>',
      ),
    ).toBe('x = 2');
  });
});

describe.skipIf(golds.length === 0)('mutateAction on the held-out fixes (sed, here-doc, str_replace_editor)', () => {
  it.each(golds)('$id ($style): at least 3 distinct near misses, each changing only the new code or its address', ({ gold }) => {
    const mutations = mutateAction(gold);
    expect(mutations.length).toBeGreaterThanOrEqual(3);
    expect(new Set(mutations.map((m) => m.text)).size).toBe(mutations.length);
    const [from, to] = writableRegion(gold);
    for (const m of mutations) {
      expect(m.text).not.toBe(gold);
      // Outside the new code the text is the gold's, but for a changed line address.
      if (m.kind !== 'wrong-line') {
        expect(m.text.slice(0, from)).toBe(gold.slice(0, from));
        expect(m.text.slice(m.text.length - (gold.length - to))).toBe(gold.slice(to));
      }
    }
  });
});

describe('changedFiles', () => {
  const section = (path: string, body: string) =>
    `diff --git a/${path} b/${path}\nindex 1..2 100644\n--- a/${path}\n+++ b/${path}\n${body}\n`;
  it('names the files whose part of the cumulative patch differs, created, edited again or reverted', () => {
    const before = section('a.py', '@@ -1 +1 @@\n-x\n+y') + section('b.py', '@@ -1 +1 @@\n-p\n+q');
    expect(changedFiles(before, before)).toEqual([]);
    const after = section('a.py', '@@ -1 +1 @@\n-x\n+z') + section('c.py', '@@ -0,0 +1 @@\n+new');
    expect(changedFiles(before, after)).toEqual(['a.py', 'b.py', 'c.py']);
    expect(changedFiles('', section('d e.py', '@@ -1 +1 @@\n-1\n+2'))).toEqual(['d e.py']);
  });
});
