/**
 * A checkpoint whose tokenizer, config and graph do not describe one model is refused when
 * it is opened, naming the file, the field and both numbers; a legitimately padded graph
 * is not. A checkpoint that fails (at opening or at run time) never costs the others their
 * results. The mismatched checkpoints are the embedded ones with a file swapped or edited.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DType, GraphBuilder, type Dim } from '../scripts/checkpoints/onnx-graph.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { scoreContinuation } from '../src/backends/single.ts';
import { InputError } from '../src/errors.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { CKPT, copyCheckpoint, DEMO_PROBES } from './helpers/paths.ts';

function editConfig(dir: string, edit: (config: Record<string, unknown>) => void): void {
  const file = join(dir, 'config.json');
  const config = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(config);
  writeFileSync(file, JSON.stringify(config, null, 2));
}

/** `base` with another checkpoint's tokenizer.json. */
function withTokenizerOf(base: string, other: string): string {
  const dir = copyCheckpoint(base);
  cpSync(join(other, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  return dir;
}

/** A graph whose logits are rows of a zero table picked by token id; `rows` < ids fails at run time. */
function tableGraph(rows: number, width: number, declaredWidth: Dim): Uint8Array {
  const g = new GraphBuilder();
  const ids = g.input('input_ids', DType.int64, ['batch_size', 'sequence_length']);
  g.floats('table', [rows, width], new Float32Array(rows * width));
  g.op1('Gather', ['table', ids], { axis: 0 }, 'logits');
  g.output('logits', DType.float, ['batch_size', 'sequence_length', declaredWidth]);
  return g.serialize('probe_test_table', 'test graph');
}

function withGraph(base: string, graph: Uint8Array): string {
  const dir = copyCheckpoint(base);
  writeFileSync(join(dir, 'onnx', 'model.onnx'), graph);
  return dir;
}

async function openError(dir: string): Promise<InputError> {
  const error = await OnnxBackend.open(dir).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(InputError);
  return error as InputError;
}

describe('checkpoint consistency, checked when the checkpoint is opened', () => {
  it('refuses a tokenizer with more ids than the graph has logits (512-token tokenizer on a 257-logit graph)', async () => {
    const dir = withTokenizerOf(CKPT.prose, CKPT.attention);
    const error = await openError(dir);
    expect(error.location).toEqual({ file: join(dir, 'tokenizer.json'), field: 'model.vocab' });
    expect(error.message).toContain('has token ids up to 511, but the graph');
    expect(error.message).toContain(`${join(dir, 'onnx', 'model.onnx')} produces only 257 logits per token`);
  });

  it("refuses a tokenizer that lacks the config's special tokens (257-token tokenizer on the 512-logit graph: the silently wrong BPB)", async () => {
    const dir = withTokenizerOf(CKPT.attention, CKPT.prose);
    const error = await openError(dir);
    expect(error.location).toEqual({ file: join(dir, 'config.json'), field: 'bos_token_id' });
    expect(error.message).toContain(`is 511, but ${join(dir, 'tokenizer.json')} has only ids 0–256`);
  });

  it("refuses a config.json vocab_size other than the graph's logits width", async () => {
    const dir = copyCheckpoint(CKPT.prose);
    editConfig(dir, (c) => {
      c.vocab_size = 300;
    });
    const error = await openError(dir);
    expect(error.location).toEqual({ file: join(dir, 'config.json'), field: 'vocab_size' });
    expect(error.message).toContain('is 300, but the graph');
    expect(error.message).toContain('produces 257 logits per token');
  });

  it('accepts a graph with more logits than the tokenizer has ids (a padded embedding) and scores with it', async () => {
    // The 257-id tokenizer on a table padded to the next multiple of 64, as exports pad it (a 512-logit graph is refused: attack-checkpoint).
    const dir = withGraph(CKPT.prose, tableGraph(320, 320, 320));
    editConfig(dir, (c) => {
      c.vocab_size = 320;
    });
    const backend = await OnnxBackend.open(dir);
    const r = await scoreContinuation(backend, 'ls', ' -la');
    expect(r!.tokenLogprobs.every((lp) => Number.isFinite(lp) && lp < 0)).toBe(true);
    await backend.close();
  });

  it('reads the logits width off one forward pass when the graph leaves it symbolic', async () => {
    const symbolic = withGraph(CKPT.prose, tableGraph(257, 257, 'vocab'));
    const backend = await OnnxBackend.open(symbolic);
    const r = await scoreContinuation(backend, 'ab', 'c');
    expect(r!.tokenLogprobs[0]).toBeCloseTo(-Math.log(257), 5); // a zero table: uniform over the measured 257
    await backend.close();
    const wrong = withGraph(CKPT.prose, tableGraph(257, 257, 'vocab'));
    editConfig(wrong, (c) => {
      c.vocab_size = 256;
    });
    expect((await openError(wrong)).message).toContain('is 256, but the graph');
  });
});

describe("a failing checkpoint never drops the others' results", () => {
  interface BpbJson {
    results: Array<{ checkpoint: string; bpb: number }>;
    errors?: Array<{ file: string | null; field: string | null; message: string }>;
  }
  const bpb = (...ckpts: string[]) =>
    runProbe(['bpb', '--ckpt', ...ckpts, '--probes', DEMO_PROBES, '--limit', '2', '--no-cache', '--json']);
  const alone = () => {
    const run = bpb(CKPT.code, CKPT.agent);
    expect(run.code, run.stderr).toBe(0);
    return (JSON.parse(run.stdout) as BpbJson).results;
  };

  it('a mismatched tokenizer: exit 2, one line naming the file and field, the others scored as if alone', () => {
    const bad = withTokenizerOf(CKPT.prose, CKPT.attention);
    const run = bpb(CKPT.code, bad, CKPT.agent);
    expectOneLineError(run, new RegExp(`^probe: ${join(bad, 'tokenizer.json')}: field "model\\.vocab": has token ids up to 511`));
    const out = JSON.parse(run.stdout) as BpbJson;
    expect(out.results).toEqual(alone());
    expect(out.errors).toEqual([expect.objectContaining({ file: join(bad, 'tokenizer.json'), field: 'model.vocab' })]);
  });

  it('a graph that fails at run time: exit 1, one line naming the graph, no stack trace, the others scored', () => {
    // Consistent on paper (257 declared logits, a 257-id tokenizer); fails on any token id from 4 up.
    const broken = withGraph(CKPT.prose, tableGraph(4, 257, 257));
    const run = bpb(CKPT.code, broken, CKPT.agent);
    expect(run.code, run.stderr).toBe(1);
    const lines = run.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines, run.stderr).toHaveLength(1); // onnxruntime's own log line silenced too
    expect(lines[0]).toMatch(new RegExp(`^probe: ${join(broken, 'onnx', 'model.onnx')}: onnxruntime failed on 1 × \\d+ tokens`));
    expect(run.stderr).not.toMatch(/^\s+at /m);
    const out = JSON.parse(run.stdout) as BpbJson;
    expect(out.results).toEqual(alone());
    expect(out.errors).toHaveLength(1);
  });
});
