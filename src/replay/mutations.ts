/**
 * Well-formed near misses of a gold action, made on its text: a wrong operator, swapped
 * operands, a negated condition, a sibling method or builtin, a dropped call, an off-by-one
 * or scaled number, a wrong line, a changed value, a wrong indentation, a partial fix (one
 * line of the new code dropped), the same change in another file. Mutations touch the part
 * of the action that writes code (the `new_str`, the sed replacement, the second argument
 * of a here-doc's `.replace(old, new)`, the edit body) where there is one, so a mutation
 * still finds what it edits and writes different code there.
 *
 * Nothing here decides whether a mutation is an edit or is wrong: a candidate that turns
 * out to change nothing (it restores the old code, its pattern no longer matches) or that
 * the verifier accepts is rejected by running it (distractors.ts).
 */
export type MutationKind =
  | 'operator'
  | 'operands'
  | 'negate'
  | 'sibling'
  | 'drop-call'
  | 'slice'
  | 'off-by-one'
  | 'scale'
  | 'wrong-line'
  | 'value'
  | 'indent'
  | 'partial'
  | 'wrong-file';

export interface Mutation {
  text: string;
  kind: MutationKind;
}

const OPERATORS: Array<[string, string]> = [
  [' <= ', ' < '],
  [' < ', ' <= '],
  [' >= ', ' > '],
  [' > ', ' >= '],
  [' >= ', ' <= '],
  [' <= ', ' >= '],
  [' > ', ' < '],
  [' < ', ' > '],
  [' == ', ' != '],
  [' != ', ' == '],
  [' === ', ' !== '],
  [' !== ', ' === '],
  [' + ', ' - '],
  [' - ', ' + '],
  [' * ', ' / '],
  [' / ', ' * '],
  [' // ', ' / '],
  [' // ', ' % '],
  [' // ', ' * '],
  [' % ', ' // '],
  [' not in ', ' in '],
  [' is not ', ' is '],
  [' and ', ' or '],
  [' or ', ' and '],
  [' && ', ' || '],
  [' || ', ' && '],
  ['True', 'False'],
  ['False', 'True'],
  ['true', 'false'],
  ['false', 'true'],
  ['//', '/'],
  ['+= ', '-= '],
  ['-= ', '+= '],
];

/** Methods and builtins that a near miss confuses with each other. */
const SIBLINGS: string[][] = [
  ['strip', 'rstrip', 'lstrip'],
  ['lower', 'upper', 'title', 'capitalize'],
  ['min', 'max'],
  ['any', 'all'],
  ['float', 'int', 'str', 'round'],
  ['floor', 'ceil'],
  ['startswith', 'endswith'],
  ['sorted', 'reversed'],
  ['append', 'extend'],
  ['keys', 'values', 'items'],
  ['find', 'rfind'],
  ['sum', 'len'],
];

const QUOTED = String.raw`('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")`;

/** Where the action's body is: inside a fenced block or a <bash> element, else all of it. */
function body(text: string): [number, number] {
  const wrapped = /^(```[\w-]*\n|<bash>\n)([\s\S]*?)\n(```|<\/bash>)\s*$/.exec(text);
  return wrapped ? [wrapped[1]!.length, wrapped[1]!.length + wrapped[2]!.length] : [0, text.length];
}

/** Where the new code is: [start, end) offsets into the text. */
export function writableRegion(text: string): [number, number] {
  const tag = /<(new_str|file_text)>([\s\S]*?)<\/\1>/.exec(text);
  if (tag) return [tag.index + tag[1]!.length + 2, tag.index + tag[1]!.length + 2 + tag[2]!.length];
  const json = /"(new_str|file_text)":\s*"((?:[^"\\]|\\.)*)"/.exec(text);
  if (json) {
    const start = json.index + json[0].length - json[2]!.length - 1;
    return [start, start + json[2]!.length];
  }
  const [from, to] = body(text);
  const inner = text.slice(from, to);
  const heredoc = /<<\s*'?(\w+)'?\n([\s\S]*?)\n\1$/m.exec(inner);
  if (heredoc) {
    const start = from + heredoc.index + heredoc[0].length - heredoc[1]!.length - 1 - heredoc[2]!.length;
    // A Python here-doc that rewrites the file with `.replace(old, new)`: its new code is `new`'s text.
    const replace = new RegExp(String.raw`\.replace\(\s*${QUOTED}\s*,\s*${QUOTED}`).exec(heredoc[2]!);
    if (replace) {
      const at = start + replace.index + replace[0].length - replace[2]!.length + 1;
      return [at, at + replace[2]!.length - 2];
    }
    return [start, start + heredoc[2]!.length];
  }
  // `s/old/new/`, with an optional line address (`6s#old#new#`).
  const sed = /(?<![A-Za-z_])(\d*(?:,\d+)?)s([/|#,])((?:\\.|(?!\2).)*)\2((?:\\.|(?!\2).)*)\2/.exec(inner);
  if (sed) {
    const start = from + sed.index + sed[1]!.length + 2 + sed[3]!.length + 1;
    return [start, start + sed[4]!.length];
  }
  const edit = /^(\s*edit \d+:\d+\n)([\s\S]*?)\nend_of_edit/m.exec(inner);
  if (edit) return [from + edit.index + edit[1]!.length, from + edit.index + edit[1]!.length + edit[2]!.length];
  return [from, to];
}

function replaceAt(text: string, at: number, length: number, by: string): string {
  return text.slice(0, at) + by + text.slice(at + length);
}

function* occurrences(text: string, needle: string, from: number, to: number): Generator<number> {
  for (let i = text.indexOf(needle, from); i >= 0 && i + needle.length <= to; i = text.indexOf(needle, i + 1)) yield i;
}

/** Matches of a regex inside the region, with offsets into the whole text. */
function* matchesIn(text: string, pattern: RegExp, from: number, to: number): Generator<{ at: number; m: RegExpMatchArray }> {
  for (const m of text.slice(from, to).matchAll(pattern)) yield { at: from + m.index!, m };
}

export function mutateAction(gold: string, repoFiles: string[] = []): Mutation[] {
  const [from, to] = writableRegion(gold);
  const region = gold.slice(from, to);
  const byKind: Mutation[][] = [];
  const push = (list: Mutation[], kind: MutationKind, text: string) => list.push({ kind, text });

  const operator: Mutation[] = [];
  for (const [a, b] of OPERATORS)
    for (const at of occurrences(gold, a, from, to)) push(operator, 'operator', replaceAt(gold, at, a.length, b));
  byKind.push(operator);

  // `a // b` → `b // a`: both sides a name, attribute or number.
  const operands: Mutation[] = [];
  for (const { at, m } of matchesIn(gold, /(?<![\w.])([\w.]+) (\/\/|\/|-|%|\*\*|<=|>=|<|>) ([\w.]+)(?![\w.(])/g, from, to)) {
    push(operands, 'operands', replaceAt(gold, at, m[0].length, `${m[3]} ${m[2]} ${m[1]}`));
  }
  byKind.push(operands);

  const negate: Mutation[] = [];
  for (const { at, m } of matchesIn(gold, /\b(if|elif|while) (not )?/g, from, to)) {
    push(negate, 'negate', replaceAt(gold, at, m[0].length, m[2] ? `${m[1]} ` : `${m[1]} not `));
  }
  byKind.push(negate);

  const sibling: Mutation[] = [];
  for (const family of SIBLINGS) {
    for (const name of family) {
      for (const { at } of matchesIn(gold, new RegExp(`(?<![\\w])${name}(?=\\()`, 'g'), from, to)) {
        for (const other of family) if (other !== name) push(sibling, 'sibling', replaceAt(gold, at, name.length, other));
      }
    }
  }
  byKind.push(sibling);

  // A method call without arguments dropped (`text.strip()` → `text`).
  const dropCall: Mutation[] = [];
  for (const { at, m } of matchesIn(gold, /\.\w+\(\)/g, from, to)) push(dropCall, 'drop-call', replaceAt(gold, at, m[0].length, ''));
  byKind.push(dropCall);

  // A slice's bounds moved: `[a:b]` → `[a:b + 1]`, `[a + 1:b]`, `[a:]`.
  const slice: Mutation[] = [];
  for (const { at, m } of matchesIn(gold, /\[([^[\]:\n]+):([^[\]:\n]+)\]/g, from, to)) {
    for (const variant of [`[${m[1]}:${m[2]} + 1]`, `[${m[1]} + 1:${m[2]}]`, `[${m[1]}:]`])
      push(slice, 'slice', replaceAt(gold, at, m[0].length, variant));
  }
  byKind.push(slice);

  const numbers: Mutation[] = [];
  const scaled: Mutation[] = [];
  for (const { at, m } of matchesIn(gold, /(?<![A-Za-z_\d])\d+(?![\d])/g, from, to)) {
    const n = Number(m[0]);
    push(numbers, 'off-by-one', replaceAt(gold, at, m[0].length, String(n + 1)));
    push(numbers, 'off-by-one', replaceAt(gold, at, m[0].length, String(n - 1)));
    // One of the off-by-ones may restore the old number: a second step keeps a changed one.
    push(scaled, 'scale', replaceAt(gold, at, m[0].length, String(n >= 2 ? n * 2 : n + 2)));
    if (n >= 2) push(scaled, 'scale', replaceAt(gold, at, m[0].length, String(n - 2)));
  }
  const header = /^(\s*edit )(\d+):(\d+)/m.exec(gold);
  if (header)
    numbers.unshift({
      kind: 'wrong-line',
      text: replaceAt(gold, header.index, header[0].length, `${header[1]}${Number(header[2]) + 1}:${Number(header[3]) + 1}`),
    });
  const sedLine = /sed -i '(\d+)([ias])/.exec(gold);
  if (sedLine)
    numbers.unshift({
      kind: 'wrong-line',
      text: replaceAt(gold, sedLine.index, sedLine[0].length, `sed -i '${Number(sedLine[1]) + 2}${sedLine[2]}`),
    });
  byKind.push(numbers, scaled);

  const values: Mutation[] = [];
  // A changed literal: the first letter's case flipped, the last character dropped, snake_case parts swapped.
  for (const { at: start, m } of matchesIn(gold, /(\\?["'])([^"'\\\n]{2,40})\1/g, from, to)) {
    const word = m[2]!;
    const at = start + m[1]!.length;
    // Parts around separators swapped (`unit_price` → `price_unit`, `%Y-%m-%d` → `%m-%Y-%d`, `%Y-%d-%m`).
    const parts = word.split(/([-_/:. ])/);
    if (parts.length >= 3 && parts.length <= 7 && parts.every((p, i) => i % 2 === 1 || p !== '')) {
      const swap = (i: number) => [...parts.slice(0, i), parts[i + 2]!, parts[i + 1]!, parts[i]!, ...parts.slice(i + 3)].join('');
      push(values, 'value', replaceAt(gold, at, word.length, swap(0)));
      if (parts.length > 3) push(values, 'value', replaceAt(gold, at, word.length, swap(parts.length - 3)));
    }
    if (/[A-Za-z]/.test(word[0]!)) {
      const flipped = word[0] === word[0]!.toUpperCase() ? word[0]!.toLowerCase() + word.slice(1) : word[0]!.toUpperCase() + word.slice(1);
      push(values, 'value', replaceAt(gold, at, word.length, flipped));
    }
    push(values, 'value', replaceAt(gold, at, word.length, word.slice(0, -1)));
    if (/[a-z]$/.test(word)) push(values, 'value', replaceAt(gold, at, word.length, `${word}s`));
  }
  // A counter or flag started at nothing instead of zero.
  for (const { at, m } of matchesIn(gold, /(?<== )0(?![\d.])/g, from, to)) push(values, 'value', replaceAt(gold, at, m[0].length, 'None'));
  byKind.push(values);

  // The new code's lines moved a level in or out (the fix's logic at the wrong block).
  const indent: Mutation[] = [];
  const lines = region.split('\n');
  const indented = lines.map((line, i) => ({ line, i })).filter(({ line }) => /^ +\S/.test(line));
  if (indented.length) {
    for (const shift of [-4, -2, 2, 4, 8]) {
      const moved = lines.map((line) =>
        /^ +\S/.test(line) ? (shift < 0 ? line.replace(new RegExp(`^ {1,${-shift}}`), '') : ' '.repeat(shift) + line) : line,
      );
      push(indent, 'indent', gold.slice(0, from) + moved.join('\n') + gold.slice(to));
    }
  }
  byKind.push(indent);

  const partial: Mutation[] = [];
  if (lines.length > 1) {
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      push(partial, 'partial', gold.slice(0, from) + [...lines.slice(0, i), ...lines.slice(i + 1)].join('\n') + gold.slice(to));
    });
  }
  byKind.push(partial);

  const wrongFile: Mutation[] = [];
  const path = repoFiles.filter((f) => gold.includes(f)).sort((a, b) => b.length - a.length)[0];
  if (path) {
    const ext = path.slice(path.lastIndexOf('.'));
    for (const other of repoFiles.filter((f) => f !== path && f.endsWith(ext) && !f.includes('test')).slice(0, 2)) {
      push(wrongFile, 'wrong-file', gold.split(path).join(other));
    }
  }
  byKind.push(wrongFile);

  // Round-robin over kinds, so the first candidates are of different kinds; no duplicates, never the gold itself.
  const seen = new Set([gold]);
  const out: Mutation[] = [];
  for (let i = 0; byKind.some((k) => i < k.length); i++) {
    for (const kind of byKind) {
      const m = kind[i];
      if (m && !seen.has(m.text)) {
        seen.add(m.text);
        out.push(m);
      }
    }
  }
  return out;
}
