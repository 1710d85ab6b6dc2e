/**
 * How close an item's nats must be to Hugging Face transformers' fp32 reference
 * (../shared/models/reference-logprobs.json): 1e-4, or one fp32 unit in the last place of the
 * reference's total where that is more. An item of 234 tokens sums to ~1,500 nats, whose fp32
 * ulp is 1.2e-4: on some CPUs onnxruntime's kernels land 1.05e-4 away, a difference fp32
 * cannot resolve, not an error in probe.
 */
export const REFERENCE_NATS = 1e-4;

export function referenceTolerance(nats: number): number {
  return Math.max(REFERENCE_NATS, 2 ** (Math.floor(Math.log2(Math.abs(nats))) - 23));
}
