/**
 * Opens a graph probe builds (transformer/forward-graph.ts, decode-graph.ts) as an
 * onnxruntime session: written with its weights to a private temporary directory, opened
 * from there, and the directory removed at once.
 *
 * Why a file and not bytes in memory: onnxruntime copies weights handed to it in memory,
 * so a model would be held twice while its session opens (and three times with
 * prepacking); weight files beside the model it maps instead, and it keeps only what its
 * kernels pack. Measured on a 336 MB (fp32) Llama: peak RSS 994 MB from memory, 468 MB
 * from files, against 103 MB for the process alone. The mapping outlives the removed
 * directory (Linux keeps a mapped file until it is unmapped), so nothing is left on disk.
 * The directory is under the OS temporary directory ($TMPDIR): a model's fp32 weights must
 * fit there while it opens.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import type { GraphBuilder } from './graph-builder.ts';

/** Writes a graph and its weights into a directory; returns the model file's path. */
export type GraphWriter = (dir: string) => string;

export async function openWrittenGraph(write: GraphWriter, options: ort.InferenceSession.SessionOptions): Promise<ort.InferenceSession> {
  const dir = mkdtempSync(join(tmpdir(), 'probe-graph-'));
  try {
    return await ort.InferenceSession.create(write(dir), options);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A builder's graph, written under `name`. */
export function writer(g: GraphBuilder, name: string, doc: string): GraphWriter {
  return (dir) => g.write(dir, name, doc, 'probe');
}
