/**
 * Every test file gets a cache directory of its own: the CLI caches backend calls by
 * default, and a test must neither read a result another test computed nor fill the
 * user's ~/.cache/probe.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.PROBE_CACHE_DIR = mkdtempSync(join(tmpdir(), 'probe-cache-'));
