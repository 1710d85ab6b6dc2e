/**
 * IEEE half-precision bits → float32. onnxruntime-node hands float16 tensors over as
 * Uint16Array bit patterns (Node 20 has no Float16Array); fp16 exports produce logits that
 * way, and everything past the graph (log-softmax, sampling) reads float32.
 */

let table: Float32Array | undefined;

/** Every one of the 65,536 half values, computed once: a lookup per logit is what keeps a 150k-wide row cheap. */
function halfTable(): Float32Array {
  if (table) return table;
  table = new Float32Array(65536);
  for (let bits = 0; bits < 65536; bits++) {
    const sign = bits & 0x8000 ? -1 : 1;
    const exp = (bits >>> 10) & 0x1f;
    const mant = bits & 0x3ff;
    table[bits] =
      exp === 0 ? sign * mant * 2 ** -24 : exp === 31 ? (mant ? NaN : sign * Infinity) : sign * (1 + mant / 1024) * 2 ** (exp - 15);
  }
  return table;
}

export function halvesToFloats(bits: Uint16Array): Float32Array {
  const lookup = halfTable();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = lookup[bits[i]!]!;
  return out;
}
