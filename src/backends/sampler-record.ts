/** What a result records of the distribution its samples were drawn from (`sampler`), where the backend can say. */
import type { CompletionBackend, SampleRequest } from './types.ts';

export async function samplerRecord(
  backend: CompletionBackend,
  sampling: Pick<SampleRequest, 'temperature' | 'topP'>,
): Promise<{ sampler?: Record<string, unknown> }> {
  const sampler = await backend.samplerSettings?.({ temperature: sampling.temperature, topP: sampling.topP });
  return sampler ? { sampler } : {};
}
