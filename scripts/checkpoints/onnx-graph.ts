/** IEEE half conversions for the checkpoint generator; the graph builder itself lives in src (probe builds its decode graphs at run time). */
export { DType, type Dim, type DTypeCode, GraphBuilder, OPSET } from '../../src/backends/onnx/graph-builder.ts';

/** Round-to-nearest-even float32 → IEEE half bits. */
export function toHalfBits(values: Float64Array | Float32Array): Uint16Array {
  const out = new Uint16Array(values.length);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  for (let i = 0; i < values.length; i++) {
    f32[0] = values[i]!;
    const x = u32[0]!;
    const sign = (x >>> 16) & 0x8000;
    const exp = ((x >>> 23) & 0xff) - 127 + 15;
    let mant = x & 0x7fffff;
    if (exp >= 31) {
      out[i] = sign | 0x7c00;
      continue;
    } // overflow → ±inf
    if (exp <= 0) {
      // subnormal or zero
      if (exp < -10) {
        out[i] = sign;
        continue;
      }
      mant |= 0x800000;
      const shift = 14 - exp;
      let half = mant >>> shift;
      const rem = mant & ((1 << shift) - 1);
      const mid = 1 << (shift - 1);
      if (rem > mid || (rem === mid && half & 1)) half++;
      out[i] = sign | half;
      continue;
    }
    let half = (exp << 10) | (mant >>> 13);
    const rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++;
    out[i] = sign | half;
  }
  return out;
}

/** IEEE half bits → number (exact). */
export function fromHalfBits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
