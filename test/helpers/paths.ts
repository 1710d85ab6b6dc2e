import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../../src/embedded.ts';

export const CKPT = {
  prose: join(EMBEDDED_CHECKPOINTS, 'ngram-prose'),
  code: join(EMBEDDED_CHECKPOINTS, 'ngram-code'),
  agent: join(EMBEDDED_CHECKPOINTS, 'ngram-agent'),
  attention: join(EMBEDDED_CHECKPOINTS, 'attn-agent'),
};
export const DEMO_PROBES = join(REPO_ROOT, 'probes', 'demo-fixtures.jsonl');
export const PROBE_BIN = join(REPO_ROOT, 'bin', 'probe.js');

export function tempDir(prefix = 'probe-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A writable copy of an embedded checkpoint, to break on purpose. */
export function copyCheckpoint(src: string): string {
  const dir = join(tempDir(), 'ckpt');
  cpSync(src, dir, { recursive: true });
  return dir;
}
