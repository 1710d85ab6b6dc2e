/** The public API of `probe`: re-exports only. */
export type { CompletionBackend, Sample, SampleRequest, ScoreRequest, ScoreResult } from './backends/types.ts';
export { OnnxBackend, type OnnxBackendOptions } from './backends/onnx/backend.ts';
export { openBackend, checkCheckpoint } from './backends/open.ts';
export { type Checkpoint, type CheckpointFacts, resolveCheckpoint } from './backends/checkpoint.ts';
export { scoreContinuation, sampleOne } from './backends/single.ts';
export { splitContinuations, splitPair, type SplitPair } from './backends/boundary.ts';
export { ProbeItem, EnvState } from './schema/probe-item.ts';
export { Task, type LoadedTask } from './schema/task.ts';
export { Trajectory, type TrajectoryAction, type TrajectoryStep } from './schema/trajectory.ts';
export { importTrajectory, detectFormat } from './trajectories/import.ts';
export { type ActionFormat, type NativeFormat, UnparsableAction } from './formats/action-format.ts';
export {
  formatOf,
  nativeFormat,
  parseActionText,
  SCAFFOLDS,
  type ItemFormatName,
  type ScaffoldName,
  type ScaffoldName as TrajectoryFormat,
  UnknownFormat,
} from './formats/registry.ts';
export { renderTranscript, renderAction, renderObservation, type Action, type TranscriptStep } from './formats/md-xml.ts';
export { LIMITS, type Sandbox, type ExecResult, type ExecOptions } from './sandbox/types.ts';
export { checkRequirements, ensureRequirements, MissingRequirements } from './setup/requirements.ts';
export { openSandbox } from './sandbox/open.ts';
export { SANDBOX_KINDS, type SandboxKind } from './settings/sandbox-kinds.ts';
export {
  DEFAULT_IMAGE_SOURCES,
  OFFLINE_IMAGE_SOURCES,
  type BuildEgress,
  type ImageSources,
  type RegistrySettings,
} from './settings/image-sources.ts';
export { acquireImage, parseReference, type BaseImage } from './sandbox/registry.ts';
export { SandboxPool, TaskPools, freshSandboxes, type GraderLease, type SandboxLease } from './sandbox/pool.ts';
export { loadTasks, loadTaskFile, type LoadTaskOptions } from './verify/load-task.ts';
export { harnessImageName } from './swebench/image-name.ts';
export { rowFacts } from './swebench/row-facts.ts';
export { readRows, readAllRows, type DatasetRow } from './datasets/rows.ts';
export { trajectoryRows, type TrajectoryRow } from './trajectories/datasets/trajectory-rows.ts';
export { gradeSandbox, verifyState, verifyRepeated, type Tampering, type Verdict } from './verify/verifier.ts';
export { parseTestLog } from './verify/log-parsers.ts';
export { replayTrajectory, type ReplayResult, type ReplayStep } from './replay/replay.ts';
export { findDistractors } from './replay/distractors.ts';
export { loadProbeItems } from './probes/load.ts';
export { scoreBpb, rankByBpb, bitsPerByte, type BpbItem, type BpbResult } from './probes/bpb.ts';
export { scoreMcq, type McqResult } from './probes/mcq.ts';
export { scorePassk, type PasskResult } from './probes/passk.ts';
export { scoreAptbench, type AptResult } from './probes/aptbench.ts';
export {
  runEpisode,
  decide,
  TERMINATIONS,
  type EpisodeStep,
  type EpisodeSettings,
  type EpisodeResult,
  type Termination,
} from './swe/episode.ts';
export { asapFormat, ASAP_FORMATS, type AsapFormat, type AsapFormatName } from './formats/asap-transcripts.ts';
export { TOOL_PROFILES, type ToolProfile } from './swe/profiles.ts';
export { buildPrefix, PrefixLeakError, type AsapPrefix } from './swe/prefix.ts';
export { prepareInstances } from './swe/prepare.ts';
export { runAsap, type AsapResult, type AsapInstance } from './swe/run.ts';
export { AsapStore } from './swe/store.ts';
export { runBehaviour, summarizeBehaviour, type RunBehaviour, type BehaviourSummary } from './swe/behaviour.ts';
export { ResultCache, CachedBackend, checkpointContentHash, defaultCacheDir } from './backends/cache.ts';
export type { ItemMemo, ItemHooks } from './probes/memo.ts';
export { RunDir, checkpointRecords, probeSetRecord, type RunManifest, type CheckpointRecord, type SampleLine } from './store/run-dir.ts';
export { JsonlLog, readJsonl } from './store/jsonl-log.ts';
export { collectRuns, type ReportData } from './report/collect.ts';
export { renderReport, REPORT_SECTIONS, type ReportOptions } from './report/html.ts';
export { probeQuality, type ProbeQualityReport, type QualityOptions, type QualityWarning } from './report/probe-quality.ts';
export { renderProbeQuality } from './report/probe-quality-text.ts';
export { passAtK, meanPassAtK } from './stats/pass-at-k.ts';
export { spearman, kendallTauB, pearson, bootstrap } from './stats/correlation.ts';
export { ProbeError, InputError, type InputLocation } from './errors.ts';
export { createRng, deriveSeed, type Rng } from './util/rng.ts';
export { loadCorpus, loadQueries, type ResearchDoc, type ResearchQuery } from './research/corpus.ts';
export { ResearchIndex, type SearchHit } from './research/search-index.ts';
export { findResearchAction, type ResearchAction } from './research/actions.ts';
export { runResearchEpisode, type ResearchEpisodeSettings, type ResearchStep } from './research/episode.ts';
export { runResearch, type ResearchResult } from './research/run.ts';
export { gradeAnswer, normalizeAnswer } from './research/grade.ts';
export { loadTerminalTask, loadTerminalTasks, type TerminalTask } from './terminal/task.ts';
export { TaskImageError, terminalImage, type TerminalImage } from './terminal/image.ts';
export { oracleRun, type OracleOptions, type OracleRow } from './terminal/oracle.ts';
export { TerminalContainer, type Grade } from './terminal/container.ts';
export { findTerminalAction, type TerminalAction, type TerminalProfile } from './terminal/actions.ts';
export { runTerminalEpisode, type TerminalEpisodeSettings, type TerminalStep } from './terminal/episode.ts';
export { buildTerminalPrefix, type TerminalPrefix } from './terminal/prefix.ts';
export { runTerminal, type TerminalResult } from './terminal/run.ts';
