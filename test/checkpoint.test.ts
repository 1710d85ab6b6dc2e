/** A `--ckpt` argument resolved once (backends/checkpoint.ts): what it is, its key, its facts, checked before any work. */
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkpointContentHash } from '../src/backends/cache.ts';
import { checkpointKey, resolveCheckpoint } from '../src/backends/checkpoint.ts';
import { EMBEDDED_CHECKPOINTS } from '../src/embedded.ts';
import { InputError } from '../src/errors.ts';
import { CKPT, tempDir } from './helpers/paths.ts';

describe('resolveCheckpoint', () => {
  it('resolves a directory as written, keyed by its absolute path, with its content hash and facts', () => {
    const written = relative(process.cwd(), CKPT.agent);
    const ckpt = resolveCheckpoint(written);
    expect(ckpt).toMatchObject({ kind: 'directory', name: written, key: CKPT.agent, dir: CKPT.agent, facts: { control: false } });
    expect(ckpt.kind === 'directory' && ckpt.contentHash()).toBe(checkpointContentHash(CKPT.agent));
    expect(resolveCheckpoint(`${CKPT.agent}/`).key).toBe(CKPT.agent);
    expect(resolveCheckpoint(`${EMBEDDED_CHECKPOINTS}/contaminated-agent`).facts.control).toBe(true);
  });

  it('resolves server URLs (replicas comma-separated) without touching the network', () => {
    const ckpt = resolveCheckpoint('http://127.0.0.1:9/v1, http://127.0.0.1:10/v1');
    expect(ckpt).toMatchObject({ kind: 'server', urls: ['http://127.0.0.1:9/v1', 'http://127.0.0.1:10/v1'], facts: { control: false } });
    expect(checkpointKey('http://127.0.0.1:9/v1')).toBe('http://127.0.0.1:9/v1');
  });

  it('refuses, as bad input naming the argument, a directory that is not a checkpoint and a URL that does not parse', () => {
    const empty = tempDir();
    expect(() => resolveCheckpoint(empty)).toThrow(InputError);
    expect(() => resolveCheckpoint(`${empty}/missing`)).toThrow(/not a checkpoint directory/);
    expect(() => resolveCheckpoint('http://exa mple:80/v1')).toThrow(/not a server URL: http:\/\/exa mple:80\/v1/);
  });
});
