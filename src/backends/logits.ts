/** Row-wise operations on logits, in float64, without materialising more than one row. */
import type { Rng } from '../util/rng.ts';

/** log p(target) under softmax(row), whether target is the row's argmax (first max wins), and the argmax with its log p. */
export function logSoftmaxAt(
  logits: Float32Array,
  offset: number,
  vocab: number,
  target: number,
): { logprob: number; isArgmax: boolean; argmax: number; argmaxLogprob: number } {
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < vocab; i++) {
    const v = logits[offset + i]!;
    if (v > max) {
      max = v;
      argmax = i;
    }
  }
  let sum = 0;
  for (let i = 0; i < vocab; i++) sum += Math.exp(logits[offset + i]! - max);
  const logSum = Math.log(sum);
  return { logprob: logits[offset + target]! - max - logSum, isArgmax: argmax === target, argmax, argmaxLogprob: -logSum };
}

export interface SamplingParams {
  temperature: number;
  topP: number;
  topK?: number;
}

/**
 * Draws one token from a logits row: temperature, then top-k, then top-p (nucleus: the
 * smallest set of most likely tokens whose mass reaches topP), then one uniform draw.
 * Temperature 0 is greedy. Ties are broken by the lower token id, so results depend
 * only on the logits and the random stream.
 */
export function chooseToken(row: Float32Array, params: SamplingParams, rng: Rng): number {
  const vocab = row.length;
  if (params.temperature <= 0) return firstMaximum(row);
  let max = -Infinity;
  for (let i = 0; i < vocab; i++) if (row[i]! > max) max = row[i]!;
  const probs = new Float64Array(vocab);
  let total = 0;
  for (let i = 0; i < vocab; i++) {
    probs[i] = Math.exp((row[i]! - max) / params.temperature);
    total += probs[i]!;
  }
  return drawFromWeights(probs, total, params, rng);
}

/**
 * chooseToken's draw from a row's tempered probabilities as computed elsewhere (float32,
 * e.g. by the decode graph's softmax; they need not sum to exactly 1), temperature > 0:
 * the same top-k, top-p and draw over them, summed in float64. One pass sums the row and,
 * where top-k or top-p cut it, also the mass and count of each binary exponent, which
 * place the candidates' threshold (float32Candidates). Greedy draws take firstMaximum of
 * the row's log-probabilities.
 */
export function chooseTokenFromProbs(probs: Float32Array, params: SamplingParams, rng: Rng): number {
  const vocab = probs.length;
  const topK = topKOf(params, vocab);
  let total = 0;
  if (topK === vocab && params.topP >= 1) {
    for (let i = 0; i < vocab; i++) total += probs[i]!;
    return drawFrom(probs, total, rng);
  }
  const bits = new Uint32Array(probs.buffer, probs.byteOffset, vocab);
  const exponents: ExponentHistogram = { mass: new Float64Array(256), count: new Int32Array(256) };
  for (let i = 0; i < vocab; i++) {
    const p = probs[i]!;
    const exponent = bits[i]! >>> 23;
    total += p;
    exponents.mass[exponent]! += p;
    exponents.count[exponent]!++;
  }
  return drawFromOrder(float32Candidates(probs, bits, exponents, params.topP * total, topK), probs, total, params.topP, topK, rng);
}

/** The top-k cut a request asks for, as a count of ids (the whole vocabulary where it asks for none). */
function topKOf(params: SamplingParams, vocab: number): number {
  return params.topK && params.topK > 0 && params.topK < vocab ? params.topK : vocab;
}

/** The first maximum of a row (greedy decoding). */
export function firstMaximum(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

/** Top-k, then top-p, then one uniform draw over unnormalised weights summing to `total`. */
function drawFromWeights(probs: Float64Array, total: number, params: SamplingParams, rng: Rng): number {
  const vocab = probs.length;
  const topK = topKOf(params, vocab);
  if (topK === vocab && params.topP >= 1) return drawFrom(probs, total, rng);
  return drawFromOrder(nucleusCandidates(probs, total, params.topP, topK), probs, total, params.topP, topK, rng);
}

/** The walk: keep ids in `order` until topK or topP of `total`, then one uniform draw over the kept mass. */
function drawFromOrder(order: number[], probs: Float64Array | Float32Array, total: number, topP: number, topK: number, rng: Rng): number {
  let kept = 0;
  let mass = 0;
  for (const id of order) {
    if (kept >= topK || (kept > 0 && mass >= topP * total)) break;
    mass += probs[id]!;
    kept++;
  }
  let u = rng.next() * mass;
  for (let i = 0; i < kept; i++) {
    const id = order[i]!;
    u -= probs[id]!;
    if (u < 0) return id;
  }
  return order[kept - 1]!;
}

/**
 * The most likely token ids in the order top-k/top-p walks them (probability descending,
 * lower id first among equals), enough of them that the walk stops inside: every id
 * whose probability is at least some threshold, lowered until those ids hold topP of the
 * mass or number topK. They are exactly the first ids of the whole vocabulary sorted, so
 * the draw is the one a full sort gives; sorting a few hundred ids instead of a 150K
 * vocabulary per sampled token is what keeps sampling cheap on real vocabularies.
 */
export function nucleusCandidates(probs: Float64Array, total: number, topP: number, topK: number): number[] {
  let max = 0;
  for (let i = 0; i < probs.length; i++) if (probs[i]! > max) max = probs[i]!;
  const want = topP * total;
  for (let threshold = max / 16; ; threshold /= 16) {
    const ids: number[] = [];
    let mass = 0;
    for (let i = 0; i < probs.length; i++) {
      if (probs[i]! >= threshold) {
        ids.push(i);
        mass += probs[i]!;
      }
    }
    if (mass < want && ids.length < topK && threshold > 0 && ids.length < probs.length) continue;
    ids.sort((a, b) => probs[b]! - probs[a]! || a - b);
    // The walk sums in this order, which may round differently from the sum above: check it as the walk will.
    let walked = 0;
    for (const id of ids) walked += probs[id]!;
    if (walked >= want || ids.length >= topK || threshold === 0 || ids.length === probs.length) return ids;
  }
}

/** Mass and number of a row's probabilities per float32 binary exponent (bits >>> 23). */
interface ExponentHistogram {
  mass: Float64Array;
  count: Int32Array;
}

/**
 * nucleusCandidates over float32 probabilities, with thresholds at powers of two read
 * off the bits: the threshold is the highest exponent whose ids and those above hold
 * `want` of the mass or number topK (from the histogram), and one pass collects them — at
 * most twice the ids the walk needs, where thresholds a factor of 16 apart may collect
 * sixteen times as many to sort. They are sorted as packed keys: a non-negative float32's
 * bit pattern orders as its value, so bits × 2^idBits + (2^idBits − 1 − id) is an exact
 * integer in a float64 that orders as (probability, −id), sorted by the engine's numeric
 * sort rather than a comparator.
 */
function float32Candidates(probs: Float32Array, bits: Uint32Array, exponents: ExponentHistogram, want: number, topK: number): number[] {
  const idBits = Math.max(1, Math.ceil(Math.log2(probs.length)));
  const span = 2 ** idBits; // up to 2^22 (a 4M vocabulary) bits × span + id stays within 2^53
  let exponent = 255;
  for (let m = 0, c = 0; exponent > 0; exponent--) {
    m += exponents.mass[exponent]!;
    c += exponents.count[exponent]!;
    if (m >= want || c >= topK) break;
  }
  for (; ; exponent--) {
    const floor = exponent * 2 ** 23;
    let ids: number[];
    if (idBits <= 22) {
      const keys: number[] = [];
      for (let i = 0; i < probs.length; i++) if (bits[i]! >= floor) keys.push(bits[i]! * span + (span - 1 - i));
      const sorted = Float64Array.from(keys).sort();
      ids = new Array<number>(sorted.length);
      for (let i = 0; i < sorted.length; i++) ids[i] = span - 1 - (sorted[sorted.length - 1 - i]! % span);
    } else {
      ids = [];
      for (let i = 0; i < probs.length; i++) if (bits[i]! >= floor) ids.push(i);
      ids.sort((a, b) => probs[b]! - probs[a]! || a - b);
    }
    // The walk sums in this order, which may round differently from the sums above: check it as the walk will.
    let walked = 0;
    for (const id of ids) walked += probs[id]!;
    if (walked >= want || ids.length >= topK || exponent === 0) return ids;
  }
}

function drawFrom(probs: Float64Array | Float32Array, total: number, rng: Rng): number {
  let u = rng.next() * total;
  for (let i = 0; i < probs.length; i++) {
    u -= probs[i]!;
    if (u < 0) return i;
  }
  let last = probs.length - 1;
  while (last > 0 && probs[last] === 0) last--;
  return last;
}
