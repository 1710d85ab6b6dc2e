/**
 * Counted n-gram tables with Witten-Bell interpolation, in float64. Each table row is a
 * full distribution over the vocabulary, so the graph that serves it is a lookup and a
 * checkpoint's log-probabilities follow exactly from its stored table.
 */

/** Token classes of the token *before* the current one (the class-trigram context). */
export const CLASS_COUNT = 12;
export const CLASS_NAMES = [
  'start',
  'space',
  'newline',
  'other-whitespace',
  'lower',
  'upper',
  'digit',
  'tag (< > /)',
  'quote',
  'bracket',
  'punctuation',
  'non-ascii',
] as const;

/** Class of byte-level token `id`; `vocabSize` (one past the last id) means "no previous token". */
export function tokenClass(id: number, eosId: number): number {
  if (id >= eosId) return 0;
  const c = String.fromCharCode(id);
  if (c === ' ') return 1;
  if (c === '\n') return 2;
  if (id < 0x20 || id === 0x7f) return 3;
  if (c >= 'a' && c <= 'z') return 4;
  if (c >= 'A' && c <= 'Z') return 5;
  if (c >= '0' && c <= '9') return 6;
  if ('<>/'.includes(c)) return 7;
  if ('\'"`'.includes(c)) return 8;
  if ('()[]{}'.includes(c)) return 9;
  if (id < 0x80) return 10;
  return 11;
}

interface Counts {
  total: Float64Array;
  types: Float64Array;
  cells: Map<number, Float64Array>;
}

function newCounts(rows: number): Counts {
  return { total: new Float64Array(rows), types: new Float64Array(rows), cells: new Map() };
}

function add(counts: Counts, row: number, next: number, vocab: number): void {
  let cells = counts.cells.get(row);
  if (!cells) {
    cells = new Float64Array(vocab);
    counts.cells.set(row, cells);
  }
  if (cells[next] === 0) counts.types[row]! += 1;
  cells[next]! += 1;
  counts.total[row]! += 1;
}

/** Witten-Bell: p(x|h) = (c(h,x) + T(h)·p_lower(x)) / (c(h) + T(h)); the lower order when h is unseen. */
function interpolate(counts: Counts, row: number, lower: Float64Array, out: Float64Array): void {
  const total = counts.total[row]!;
  const cells = counts.cells.get(row);
  if (!cells || total === 0) {
    out.set(lower);
    return;
  }
  const types = counts.types[row]!;
  for (let x = 0; x < out.length; x++) out[x] = (cells[x]! + types * lower[x]!) / (total + types);
}

/** Add-one unigram over the vocabulary: the floor under every higher order. */
function unigram(sequences: Int32Array[], vocab: number): Float64Array {
  const counts = new Float64Array(vocab).fill(1);
  let total = vocab;
  for (const seq of sequences)
    for (let t = 1; t < seq.length; t++) {
      counts[seq[t]!]! += 1;
      total += 1;
    }
  return counts.map((c) => c / total);
}

/**
 * Bigram log-probabilities: row y is log p(· | y). Sequences start with EOS, which is
 * never predicted at position 0.
 */
export function bigramTable(sequences: Int32Array[], vocab: number): Float64Array {
  const p1 = unigram(sequences, vocab);
  const counts = newCounts(vocab);
  for (const seq of sequences) for (let t = 0; t + 1 < seq.length; t++) add(counts, seq[t]!, seq[t + 1]!, vocab);
  const table = new Float64Array(vocab * vocab);
  const row = new Float64Array(vocab);
  for (let y = 0; y < vocab; y++) {
    interpolate(counts, y, p1, row);
    for (let x = 0; x < vocab; x++) table[y * vocab + x] = Math.log(row[x]!);
  }
  return table;
}

/**
 * Class-trigram log-probabilities: row `y·C + class(z)` is log p(· | z, y), where z is
 * the token before y (class 0 when y is the first token).
 */
export function classTrigramTable(sequences: Int32Array[], vocab: number, eosId: number): Float64Array {
  const p1 = unigram(sequences, vocab);
  const c2 = newCounts(vocab);
  const c3 = newCounts(vocab * CLASS_COUNT);
  for (const seq of sequences) {
    for (let t = 0; t + 1 < seq.length; t++) {
      const y = seq[t]!;
      const cls = t === 0 ? 0 : tokenClass(seq[t - 1]!, eosId);
      add(c2, y, seq[t + 1]!, vocab);
      add(c3, y * CLASS_COUNT + cls, seq[t + 1]!, vocab);
    }
  }
  const table = new Float64Array(vocab * CLASS_COUNT * vocab);
  const p2 = new Float64Array(vocab);
  const p3 = new Float64Array(vocab);
  for (let y = 0; y < vocab; y++) {
    interpolate(c2, y, p1, p2);
    for (let cls = 0; cls < CLASS_COUNT; cls++) {
      const row = y * CLASS_COUNT + cls;
      interpolate(c3, row, p2, p3);
      for (let x = 0; x < vocab; x++) table[row * vocab + x] = Math.log(p3[x]!);
    }
  }
  return table;
}
