/** The public API of `probe`: re-exports only. */
export type { CompletionBackend, Sample, SampleRequest, ScoreRequest, ScoreResult } from './backends/types.ts';
export { OnnxBackend, type OnnxBackendOptions } from './backends/onnx/backend.ts';
export { openBackend, checkCheckpoint } from './backends/open.ts';
export { scoreContinuation, sampleOne } from './backends/single.ts';
export { splitContinuations, splitPair, type SplitPair } from './backends/boundary.ts';
export { ProbeItem, EnvState } from './schema/probe-item.ts';
export { loadProbeItems } from './probes/load.ts';
export { scoreBpb, rankByBpb, bitsPerByte, type BpbItem, type BpbResult } from './probes/bpb.ts';
export { renderTranscript, renderAction, renderObservation, type Action, type TranscriptStep } from './trajectories/mdxml.ts';
export { ProbeError, InputError, type InputLocation } from './errors.ts';
export { createRng, type Rng } from './util/rng.ts';
