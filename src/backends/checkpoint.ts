/**
 * A `--ckpt` argument resolved once (design.md, "Checkpoints"): a checkpoint directory, or
 * the URLs of servers that serve one model (replicas comma-separated). Resolving checks it
 * before any work — the directory's files, or the URLs' form — and reads what it says
 * about itself; stages pass this value down, so nothing below classifies the string again.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError } from '../errors.ts';
import { checkpointContentHash } from './cache.ts';
import type { HttpBackendOptions } from './http/backend.ts';
import { type ModelConfig, readCheckpointDir, readTokenizerDir } from './checkpoint-dir.ts';
import { CHECKPOINT_DIR, CHECKPOINT_JSON_BYTES } from './checkpoint-limits.ts';
import { readTextFile } from '../util/safe-tree.ts';
import { checkTokenizerAgainstConfig, tokenizerIdsOf } from './onnx/consistency.ts';
import type { Dtype } from './onnx/dtype.ts';
import { ENGINE_PROBES, type EngineChoice, type EngineName, engineTargetOf } from '../engines/engine-target.ts';
import { findEngine } from '../engines/find-engine.ts';

/** What a checkpoint directory says about itself in the `probe_ladder` block of its config.json. */
export interface CheckpointFacts {
  /** Has seen the probes: shown as a ceiling, never shortlisted, recommended or correlated (unless asked for). */
  control: boolean;
  /** Held-out code BPB measured when it was made (lower is better), where known. */
  heldout_code_bpb: number | null;
}

/** A checkpoint behind a server, or a directory without the block: a candidate with no known quality. */
export const NO_FACTS: CheckpointFacts = { control: false, heldout_code_bpb: null };

interface Resolved {
  /** As the user wrote it: the name results and tables carry (`checkpoint`). */
  name: string;
  /** What identifies it in a run directory: `./a`, `a` and `/abs/a` are one checkpoint. */
  key: string;
  facts: CheckpointFacts;
}

export interface DirectoryCheckpoint extends Resolved {
  kind: 'directory';
  /** The directory, absolute. */
  dir: string;
  config: ModelConfig;
  /** sha256 over every file (read once per process while the files are unchanged: cache.ts). */
  contentHash(): string;
}

export interface ServerCheckpoint extends Resolved {
  kind: 'server';
  urls: string[];
}

/** A GGUF file or a Hugging Face directory: served for the run by an engine probe starts (engines/launch.ts). */
export interface EngineCheckpoint extends Resolved {
  kind: 'engine';
  engine: EngineName;
  /** The file or directory, absolute. */
  path: string;
  /** The engine's program (found when the checkpoint is resolved, so a missing one stops the run before any work). */
  program: string;
}

export type Checkpoint = DirectoryCheckpoint | ServerCheckpoint | EngineCheckpoint;

/** Whether a `--ckpt` argument names servers rather than a directory: the one place that tells them apart. */
export function isServerAddress(spec: string): boolean {
  return /^https?:\/\//i.test(spec);
}

/** The key of a `--ckpt` argument in a run directory (`Checkpoint.key`), for names read back from results. */
export function checkpointKey(spec: string): string {
  return isServerAddress(spec) ? spec : resolve(spec);
}

/** Reads the facts of a checkpoint named in results; a server, a directory gone or without the block has none. */
export function checkpointFacts(spec: string): CheckpointFacts {
  return isServerAddress(spec) ? NO_FACTS : directoryFacts(spec);
}

function directoryFacts(dir: string): CheckpointFacts {
  const file = join(dir, 'config.json');
  if (!existsSync(file)) return NO_FACTS;
  try {
    return factsOf(JSON.parse(readTextFile(file, { maxBytes: CHECKPOINT_JSON_BYTES, what: CHECKPOINT_DIR })));
  } catch {
    return NO_FACTS; // reading the checkpoint itself reports a malformed (or unreadable) config.json
  }
}

/** The facts a parsed config.json states in its probe_ladder block. */
function factsOf(config: unknown): CheckpointFacts {
  const ladder = (config as { probe_ladder?: unknown } | null)?.probe_ladder;
  if (!ladder || typeof ladder !== 'object') return NO_FACTS;
  const { control, contaminated, heldout_code_bpb: bpb } = ladder as Record<string, unknown>;
  return {
    control: control === true || contaminated === true,
    heldout_code_bpb: typeof bpb === 'number' && Number.isFinite(bpb) ? bpb : null,
  };
}

/**
 * Checks a `--ckpt` argument without loading weights and resolves it: a directory's files
 * (config, tokenizer, the graph `dtype` picks), or each URL's form and the `--tokenizer`
 * directory a server's text is counted with (which must be its config.json's, where it has
 * one: onnx/consistency.ts).
 */
export function resolveCheckpoint(
  spec: string,
  options: { http?: HttpBackendOptions; dtype?: Dtype | undefined; engine?: EngineChoice | undefined; scores?: boolean } = {},
): Checkpoint {
  if (isServerAddress(spec)) {
    const urls = spec.split(',').map((url) => url.trim());
    for (const url of urls) {
      try {
        new URL(url);
      } catch {
        throw new InputError({ file: spec }, `not a server URL: ${url}`);
      }
    }
    if (options.http?.tokenizerDir) {
      // The text of a served model is counted with this tokenizer: it must be that model's (its config.json, where it has one).
      const tokenizer = readTokenizerDir(options.http.tokenizerDir);
      checkTokenizerAgainstConfig(tokenizer.dir, tokenizer.config, tokenizerIdsOf(tokenizer));
    }
    return { kind: 'server', name: spec, key: checkpointKey(spec), urls, facts: NO_FACTS };
  }
  const target = engineTargetOf(spec, options.engine);
  if (target) {
    if (options.scores && !ENGINE_PROBES[target.engine].scores)
      throw new InputError(
        { file: spec },
        `this probe scores prompts, and ${ENGINE_PROBES[target.engine].label} returns no prompt log-probs (its /v1/completions ignores echo); score the Hugging Face checkpoint it was converted from (in process, or with vLLM) — a GGUF runs pass@K and ASAP`,
      );
    return {
      kind: 'engine',
      name: spec,
      key: checkpointKey(spec),
      engine: target.engine,
      path: target.path,
      program: findEngine(spec, target),
      facts: NO_FACTS,
    };
  }
  // Its tokenizer, config and graph are checked against each other when it is opened, before it scores
  // (onnx/consistency.ts): a mismatched checkpoint then costs the others nothing.
  const files = readCheckpointDir(spec, options.dtype);
  return {
    kind: 'directory',
    name: spec,
    key: checkpointKey(spec),
    dir: files.dir,
    config: files.config,
    facts: factsOf(files.config),
    contentHash: () => checkpointContentHash(files.dir),
  };
}
