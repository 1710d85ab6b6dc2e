/**
 * The embedded checkpoint ladder: which corpus each rung counts, and how its directory
 * (transformers.js layout) is written. Everything here is a pure function of the
 * committed corpora, so `npm run gen:checkpoints` reproduces the files byte for byte.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PreTrainedTokenizer } from '@huggingface/transformers';
import { synthesizeAgentLogs, type SourceFile } from './agent-logs.ts';
import { attentionGraph, ngramGraph } from './graphs.ts';
import { bigramTable, classTrigramTable, CLASS_COUNT, CLASS_NAMES } from './ngram.ts';
import { buildTokenizer, trainBpe, type BuiltTokenizer } from './tokenizer.ts';

export type CorpusName = 'prose' | 'code' | 'agent';

export interface Corpora { prose: string[]; code: string[]; agent: string[] }

export interface RungSpec {
  name: string;
  family: 'ngram' | 'attention';
  corpora: CorpusName[];
  description: string;
}

/** Worst to best agentic-coding potential, by construction of what each rung has read. */
export const LADDER: RungSpec[] = [
  { name: 'ngram-prose', family: 'ngram', corpora: ['prose'],
    description: 'Byte-level class-trigram counted from English prose only (license texts).' },
  { name: 'ngram-code', family: 'ngram', corpora: ['prose', 'code'],
    description: 'Byte-level class-trigram counted from prose + Python source and tests.' },
  { name: 'ngram-agent', family: 'ngram', corpora: ['prose', 'code', 'agent'],
    description: 'Byte-level class-trigram counted from prose + code + synthetic shell/agent session logs.' },
  { name: 'attn-agent', family: 'attention', corpora: ['prose', 'code', 'agent'],
    description: 'Two-layer attention decoder with a KV cache over a 512-token BPE vocabulary: counted bigram + small attention term, from prose + code + agent logs.' },
];

/**
 * The order the shipped probes must show (lower BPB first). Rungs in one group are not
 * ordered against each other: they have read the same corpora.
 */
export const EXPECTED_ORDER: string[][] = [['ngram-agent', 'attn-agent'], ['ngram-code'], ['ngram-prose']];

export const AGENT_SESSIONS = 300;
export const AGENT_SEED = 'ladder-v1';
export const BPE_MERGES = 255;

export function loadCorpora(root: string): Corpora {
  const read = (dir: string, ext: string) =>
    readdirSync(join(root, dir)).filter((f) => f.endsWith(ext)).sort().map((f) => ({ f, text: readFileSync(join(root, dir, f), 'utf8') }));
  const code: SourceFile[] = read('code', '.py').map(({ f, text }) => ({ path: (f.startsWith('test_') ? 'tests/' : 'src/') + f, text }));
  return {
    prose: read('prose', '.txt').map((d) => d.text),
    code: code.map((d) => d.text),
    agent: synthesizeAgentLogs(code, AGENT_SESSIONS, AGENT_SEED),
  };
}

/** Files of one checkpoint directory, path → contents. */
export type CheckpointFiles = Map<string, Uint8Array | string>;

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

function checkpointFiles(config: object, tok: BuiltTokenizer, model: Uint8Array): CheckpointFiles {
  return new Map<string, Uint8Array | string>([
    ['config.json', json(config)],
    ['tokenizer.json', json(tok.json)],
    ['tokenizer_config.json', json(tok.config)],
    ['onnx/model.onnx', model],
  ]);
}

/** config.json fields of an attention checkpoint, as Hugging Face names them. */
function attentionConfig(tok: BuiltTokenizer, dims: { heads: number; headDim: number; layers: number }, window: number) {
  return {
    architectures: ['ProbeAttentionForCausalLM'], model_type: 'probe-attention',
    vocab_size: tok.vocabSize, hidden_size: dims.heads * dims.headDim, num_hidden_layers: dims.layers,
    num_attention_heads: dims.heads, num_key_value_heads: dims.heads, head_dim: dims.headDim,
    max_position_embeddings: window, bos_token_id: tok.eosId, eos_token_id: tok.eosId, use_cache: true,
  };
}

function documents(corpora: Corpora, names: CorpusName[]): string[] {
  return names.flatMap((n) => corpora[n]);
}

export function buildRung(spec: RungSpec, corpora: Corpora): CheckpointFiles {
  const docs = documents(corpora, spec.corpora);
  return spec.family === 'ngram' ? buildNgram(spec, docs) : buildAttention(spec, docs);
}

function buildNgram(spec: RungSpec, docs: string[]): CheckpointFiles {
  const tok = buildTokenizer({ merges: [] });
  const encoder = new TextEncoder();
  const sequences = docs.map((d) => Int32Array.from([tok.eosId, ...encoder.encode(d), tok.eosId]));
  const table = classTrigramTable(sequences, tok.vocabSize, tok.eosId);
  const model = ngramGraph({ vocab: tok.vocabSize, eosId: tok.eosId, table, doc: spec.description });
  const config = {
    architectures: ['ProbeNgramForCausalLM'], model_type: 'probe-ngram',
    vocab_size: tok.vocabSize, max_position_embeddings: 32768,
    bos_token_id: tok.eosId, eos_token_id: tok.eosId, use_cache: false,
    probe_ladder: { name: spec.name, corpora: spec.corpora, description: spec.description,
      table: { initializer: 'ngram_logprobs', dtype: 'float16', row: `token * ${CLASS_COUNT} + class(previous token)`, classes: CLASS_NAMES } },
  };
  return checkpointFiles(config, tok, model);
}

function buildAttention(spec: RungSpec, docs: string[]): CheckpointFiles {
  const tok = buildTokenizer({ merges: trainBpe(docs, BPE_MERGES) });
  const tokenizer = new PreTrainedTokenizer(tok.json, tok.config);
  const sequences = docs.map((d) => Int32Array.from([tok.eosId, ...tokenizer.encode(d, { add_special_tokens: false }), tok.eosId]));
  const dims = { heads: 2, headDim: 8, layers: 2 };
  const model = attentionGraph({
    vocab: tok.vocabSize, ...dims, outputScale: 0.05,
    bigram: bigramTable(sequences, tok.vocabSize), seed: spec.name, doc: spec.description,
  });
  const config = {
    ...attentionConfig(tok, dims, 8192),
    probe_ladder: { name: spec.name, corpora: spec.corpora, description: spec.description,
      table: { initializer: 'bigram_logprobs', dtype: 'float32', row: 'token' } },
  };
  return checkpointFiles(config, tok, model);
}

/** A wide-vocabulary attention checkpoint for benchmarks (not shipped): no bigram, `vocab` outputs. */
export function buildWideAttention(vocab: number, maxPositions: number, docs: string[]): CheckpointFiles {
  const merges = trainBpe(docs, BPE_MERGES);
  const tok = buildTokenizer({ merges, fillers: vocab - 257 - merges.length });
  const dims = { heads: 4, headDim: 16, layers: 2 };
  const model = attentionGraph({ vocab: tok.vocabSize, ...dims, outputScale: 1, seed: `wide-${vocab}`, doc: 'benchmark checkpoint' });
  return checkpointFiles(attentionConfig(tok, dims, maxPositions), tok, model);
}
