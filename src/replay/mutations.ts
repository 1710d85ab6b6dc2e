/**
 * Well-formed near misses of a gold action, made on its text: a wrong operator, an
 * off-by-one number or line, a changed value, a partial fix (one line of the new code
 * dropped), the same change in another file. Mutations touch the part of the action
 * that writes code (the `new_str`, the sed replacement, the edit body) where there is one.
 */
export interface Mutation { text: string; kind: 'operator' | 'off-by-one' | 'wrong-line' | 'value' | 'partial' | 'wrong-file' }

const OPERATORS: Array<[string, string]> = [
  [' <= ', ' < '], [' < ', ' <= '], [' >= ', ' > '], [' > ', ' >= '], [' == ', ' != '], [' != ', ' == '],
  [' === ', ' !== '], [' !== ', ' === '], [' + ', ' - '], [' - ', ' + '], [' * ', ' / '], [' / ', ' * '],
  [' and ', ' or '], [' or ', ' and '], [' && ', ' || '], [' || ', ' && '], ['True', 'False'], ['true', 'false'],
  ['//', '/'], ['.lower()', '.upper()'], ['+= ', '-= '],
];

/** Where the action's body is: inside a fenced block or a <bash> element, else all of it. */
function body(text: string): [number, number] {
  const wrapped = /^(```[\w-]*\n|<bash>\n)([\s\S]*?)\n(```|<\/bash>)\s*$/.exec(text);
  return wrapped ? [wrapped[1]!.length, wrapped[1]!.length + wrapped[2]!.length] : [0, text.length];
}

/** Where the new code is: [start, end) offsets into the text. */
function writableRegion(text: string): [number, number] {
  const tag = /<(new_str|file_text)>([\s\S]*?)<\/\1>/.exec(text);
  if (tag) return [tag.index + tag[1]!.length + 2, tag.index + tag[1]!.length + 2 + tag[2]!.length];
  const json = /"(new_str|file_text)":\s*"((?:[^"\\]|\\.)*)"/.exec(text);
  if (json) { const start = json.index + json[0].length - json[2]!.length - 1; return [start, start + json[2]!.length]; }
  const [from, to] = body(text);
  const inner = text.slice(from, to);
  const heredoc = /<<\s*'?(\w+)'?\n([\s\S]*?)\n\1$/m.exec(inner);
  if (heredoc) { const start = from + heredoc.index + heredoc[0].length - heredoc[1]!.length - 1 - heredoc[2]!.length; return [start, start + heredoc[2]!.length]; }
  const sed = /\bs([/|#,])((?:\\.|(?!\1).)*)\1((?:\\.|(?!\1).)*)\1/.exec(inner);
  if (sed) { const start = from + sed.index + 2 + sed[2]!.length + 1; return [start, start + sed[3]!.length]; }
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

export function mutateAction(gold: string, repoFiles: string[] = []): Mutation[] {
  const [from, to] = writableRegion(gold);
  const byKind: Mutation[][] = [];
  const operator: Mutation[] = [];
  for (const [a, b] of OPERATORS) for (const at of occurrences(gold, a, from, to)) operator.push({ kind: 'operator', text: replaceAt(gold, at, a.length, b) });
  byKind.push(operator);
  const numbers: Mutation[] = [];
  for (const m of gold.slice(from, to).matchAll(/(?<![\w.])\d+(?![\w.])/g)) {
    const n = Number(m[0]);
    const at = from + m.index!;
    numbers.push({ kind: 'off-by-one', text: replaceAt(gold, at, m[0].length, String(n + 1)) });
    if (n > 0) numbers.push({ kind: 'off-by-one', text: replaceAt(gold, at, m[0].length, String(n - 1)) });
  }
  const header = /^(\s*edit )(\d+):(\d+)/m.exec(gold);
  if (header) numbers.unshift({ kind: 'wrong-line', text: replaceAt(gold, header.index, header[0].length, `${header[1]}${Number(header[2]) + 1}:${Number(header[3]) + 1}`) });
  const sedLine = /sed -i '(\d+)([ia])/.exec(gold);
  if (sedLine) numbers.unshift({ kind: 'wrong-line', text: replaceAt(gold, sedLine.index, sedLine[0].length, `sed -i '${Number(sedLine[1]) + 2}${sedLine[2]}`) });
  byKind.push(numbers);
  const values: Mutation[] = [];
  // A changed literal: the first letter's case flipped, or the last character dropped.
  for (const m of gold.slice(from, to).matchAll(/(\\?["'])([^"'\\\n]{2,40})\1/g)) {
    const word = m[2]!;
    const at = from + m.index! + m[1]!.length;
    if (/[A-Za-z]/.test(word[0]!)) {
      const flipped = word[0] === word[0]!.toUpperCase() ? word[0]!.toLowerCase() + word.slice(1) : word[0]!.toUpperCase() + word.slice(1);
      values.push({ kind: 'value', text: replaceAt(gold, at, word.length, flipped) });
    }
    values.push({ kind: 'value', text: replaceAt(gold, at, word.length, word.slice(0, -1)) });
  }
  byKind.push(values);
  const partial: Mutation[] = [];
  const region = gold.slice(from, to);
  const lines = region.split('\n');
  if (lines.length > 1) {
    lines.forEach((line, i) => {
      if (line.trim() === '') return;
      partial.push({ kind: 'partial', text: gold.slice(0, from) + [...lines.slice(0, i), ...lines.slice(i + 1)].join('\n') + gold.slice(to) });
    });
  }
  byKind.push(partial);
  const wrongFile: Mutation[] = [];
  const path = repoFiles.filter((f) => gold.includes(f)).sort((a, b) => b.length - a.length)[0];
  if (path) {
    const ext = path.slice(path.lastIndexOf('.'));
    for (const other of repoFiles.filter((f) => f !== path && f.endsWith(ext) && !f.includes('test')).slice(0, 2)) {
      wrongFile.push({ kind: 'wrong-file', text: gold.split(path).join(other) });
    }
  }
  byKind.push(wrongFile);
  // Round-robin over kinds, so the first candidates are of different kinds; no duplicates, never the gold itself.
  const seen = new Set([gold]);
  const out: Mutation[] = [];
  for (let i = 0; byKind.some((k) => i < k.length); i++) {
    for (const kind of byKind) {
      const m = kind[i];
      if (m && !seen.has(m.text)) { seen.add(m.text); out.push(m); }
    }
  }
  return out;
}
