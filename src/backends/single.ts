/** One request, one answer: the common case of the batch interface. */
import { ProbeError } from '../errors.ts';
import type { CompletionBackend, Sample, SampleRequest, ScoreResult } from './types.ts';

export async function scoreContinuation(backend: CompletionBackend, context: string, continuation: string): Promise<ScoreResult> {
  const result = (await backend.score([{ context, continuations: [continuation] }]))[0]?.[0];
  if (!result) throw new ProbeError(`${backend.id} returned no score`);
  return result;
}

export async function sampleOne(backend: CompletionBackend, request: SampleRequest): Promise<Sample[]> {
  const samples = (await backend.sample([request]))[0];
  if (!samples) throw new ProbeError(`${backend.id} returned no samples`);
  return samples;
}
