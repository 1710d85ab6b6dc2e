/** One request, one answer: the common case of the batch interface. */
import { ProbeError } from '../errors.ts';
import type { CompletionBackend, Sample, SampleRequest, ScoreResult } from './types.ts';

/** `label`: what the score is for, named in messages about its answer (types.ts). */
export async function scoreContinuation(
  backend: CompletionBackend,
  context: string,
  continuation: string,
  label?: string,
): Promise<ScoreResult> {
  const result = (await backend.score([{ context, continuations: [continuation], ...(label ? { label } : {}) }]))[0]?.[0];
  if (!result) throw new ProbeError(`${backend.id} returned no score`);
  return result;
}

export async function sampleOne(backend: CompletionBackend, request: SampleRequest): Promise<Sample[]> {
  const samples = (await backend.sample([request]))[0];
  if (!samples) throw new ProbeError(`${backend.id} returned no samples`);
  return samples;
}
