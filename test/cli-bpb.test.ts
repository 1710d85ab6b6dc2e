/** `probe bpb` as a user runs it: the real bin, real checkpoints, exit codes and messages. */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXPECTED_ORDER, LADDER } from '../scripts/checkpoints/ladder.ts';
import { readLadder } from '../src/embedded.ts';
import { EMBEDDED_PROBES, REPO_ROOT } from '../src/embedded.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { CKPT, copyCheckpoint, DEMO_PROBES, PROBE_BIN, tempDir } from './helpers/paths.ts';

function probe(args: string[]) {
  const run = spawnSync(process.execPath, [PROBE_BIN, ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

interface BpbJson {
  results: Array<{
    checkpoint: string;
    bpb: number;
    items: Array<{ id: string; bpb: number; nats: number; bytes: number; tokens: number }>;
  }>;
  ranking: string[];
  errors?: Array<{ file: string; field: string | null; message: string }>;
}

function probeFile(lines: string[]): string {
  const file = join(tempDir(), 'probes.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}
const goodLine = () => readFileSync(DEMO_PROBES, 'utf8').split('\n')[0]!;

describe('probe bpb', () => {
  it('scores the embedded ladder on the shipped probes with the documented JSON fields', () => {
    const run = probe(['bpb', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout) as BpbJson;
    expect(out.results).toHaveLength(readLadder().rungs.length);
    const shipped = loadProbeItems(EMBEDDED_PROBES);
    for (const r of out.results) {
      expect(r.items.map((i) => i.id)).toEqual(shipped.map((i) => i.id));
      for (const item of r.items) {
        expect(Object.keys(item)).toEqual(expect.arrayContaining(['id', 'bpb', 'nats', 'bytes', 'tokens']));
        expect(item.bpb).toBeCloseTo(item.nats / (Math.LN2 * item.bytes), 10);
      }
      const nats = r.items.reduce((a, i) => a + i.nats, 0);
      const bytes = r.items.reduce((a, i) => a + i.bytes, 0);
      expect(r.bpb).toBeCloseTo(nats / (Math.LN2 * bytes), 10);
    }
    // The contaminated control has memorised the demo golds; the ladder proper ranks as constructed.
    expect(out.ranking[0]).toMatch(/contaminated-agent$/);
    const name = (c: string) => c.split('/').pop()!;
    const built = out.ranking.map(name).filter((c) => LADDER.some((r) => r.name === c && !r.contaminated));
    expect(new Set(built.slice(0, 2))).toEqual(new Set(EXPECTED_ORDER[0]));
    expect(built.at(-1)).toBe('ngram-prose');
    // The real rungs in their known order (held-out code BPB).
    expect(out.ranking.map(name).filter((c) => c.startsWith('llama-'))).toEqual(readLadder().known_order);
    const sorted = [...out.results].sort((a, b) => a.bpb - b.bpb).map((r) => r.checkpoint);
    expect(out.ranking).toEqual(sorted);
  });

  it('prints a ranking table when not asked for JSON, and honours --limit', () => {
    const run = probe(['bpb', '--ckpt', CKPT.prose, CKPT.agent, '--probes', DEMO_PROBES, '--limit', '3']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/on 3 probe items/);
    const rows = run.stderr.split('\n').filter((l) => /^\s+\d+\s/.test(l));
    expect(rows[0]).toContain('ngram-agent');
    expect(rows[1]).toContain('ngram-prose');
  });

  it('shows an example in --help', () => {
    const run = probe(['bpb', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/Example:\n\s+probe bpb --ckpt/);
  });

  it('rejects a checkpoint directory without tokenizer.json (exit 2, names the file)', () => {
    const dir = copyCheckpoint(CKPT.prose);
    rmSync(join(dir, 'tokenizer.json'));
    const run = probe(['bpb', '--ckpt', dir, '--probes', DEMO_PROBES]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(join(dir, 'tokenizer.json'));
    expect(run.stderr).toMatch(/missing/);
  });

  it('rejects a malformed tokenizer.json naming the file and field', () => {
    const dir = copyCheckpoint(CKPT.prose);
    writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify({ version: '1.0' }));
    const run = probe(['bpb', '--ckpt', dir, '--probes', DEMO_PROBES]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${join(dir, 'tokenizer.json')}: field "model"`);
  });

  it("reports a corrupt ONNX file by name and keeps the other checkpoints' results", () => {
    const dir = copyCheckpoint(CKPT.prose);
    const model = join(dir, 'onnx', 'model.onnx');
    writeFileSync(model, readFileSync(model).subarray(0, 5000));
    const run = probe(['bpb', '--ckpt', CKPT.agent, dir, '--probes', DEMO_PROBES, '--json']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(model);
    const out = JSON.parse(run.stdout) as BpbJson;
    expect(out.results.map((r) => r.checkpoint)).toEqual([CKPT.agent]);
    expect(out.errors?.[0]?.file).toBe(model);
  });

  it('rejects a probe line that is not JSON, naming file and line', () => {
    const file = probeFile([goodLine(), '{"id": "broken",']);
    const run = probe(['bpb', '--ckpt', CKPT.prose, '--probes', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${file}:2: not valid JSON`);
  });

  it('rejects a probe missing gold, naming file, line and field', () => {
    const item = JSON.parse(goodLine()) as Record<string, unknown>;
    delete item.gold;
    const file = probeFile([goodLine().replace('"demo-01"', '"demo-xx"'), JSON.stringify(item)]);
    const run = probe(['bpb', '--ckpt', CKPT.prose, '--probes', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${file}:2: field "gold"`);
  });

  it('rejects a missing probe path and a bad --limit as usage errors', () => {
    expect(probe(['bpb', '--ckpt', CKPT.prose, '--probes', '/nonexistent/probes.jsonl']).code).toBe(2);
    const run = probe(['bpb', '--limit', 'zero']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--limit/);
  });
});
