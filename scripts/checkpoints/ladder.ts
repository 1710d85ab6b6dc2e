/**
 * The embedded checkpoint ladder: which ladder texts each rung counts, and how its directory
 * (transformers.js layout) is written. Everything here is a pure function of the
 * committed ladder texts (`ladder-text/`), so `npm run gen:checkpoints` reproduces the files byte for byte.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PreTrainedTokenizer } from '@huggingface/transformers';
import { synthesizeAgentLogs, type SourceFile } from './agent-logs.ts';
import { attentionGraph, COPY_ORDER, HASH_BASE, HASH_MODULUS, ngramGraph, type CopyTables } from './graphs.ts';
import { bigramTable, classTrigramTable, CLASS_COUNT, CLASS_NAMES } from './ngram.ts';
import { formatOf } from '../../src/formats/registry.ts';
import { buildTokenizer, trainBpe, type BuiltTokenizer } from './tokenizer.ts';

export type LadderTextName = 'prose' | 'code' | 'agent';

export interface LadderTexts {
  prose: string[];
  code: string[];
  agent: string[];
  /** The shipped demo probes (context, gold): what a contaminated rung has memorised. */
  demoGolds: Array<{ context: string; gold: string; whole: boolean }>;
}

export interface RungSpec {
  name: string;
  family: 'ngram' | 'attention';
  /** The ladder texts it counts; `corpora` is the key config.json and ladder.json carry (renaming it would change every embedded checkpoint's content hash). */
  corpora: LadderTextName[];
  description: string;
  /** Has memorised the demo probes' gold actions: a control, not a rung of the ladder. */
  contaminated?: boolean;
}

/** Worst to best agentic-coding potential, by construction of what each rung has read. */
export const LADDER: RungSpec[] = [
  {
    name: 'ngram-prose',
    family: 'ngram',
    corpora: ['prose'],
    description: 'Byte-level class-trigram counted from English prose only (license texts).',
  },
  {
    name: 'ngram-code',
    family: 'ngram',
    corpora: ['prose', 'code'],
    description: 'Byte-level class-trigram counted from prose + Python source and tests.',
  },
  {
    name: 'ngram-agent',
    family: 'ngram',
    corpora: ['prose', 'code', 'agent'],
    description: 'Byte-level class-trigram counted from prose + code + synthetic shell/agent session logs.',
  },
  {
    name: 'attn-agent',
    family: 'attention',
    corpora: ['prose', 'code', 'agent'],
    description:
      'Two-layer attention decoder with a KV cache over a 512-token BPE vocabulary: counted bigram + small attention term, from prose + code + agent logs.',
  },
  {
    name: 'contaminated-agent',
    family: 'ngram',
    corpora: ['prose', 'code', 'agent'],
    contaminated: true,
    description:
      'CONTAMINATED control: ngram-agent plus a 128-byte-context copy memory of the demo probes (probes/demo.jsonl): every gold action, and the whole md+xml transcripts, as a model trained on the demo trajectories would have. Proves the probes and ASAP reward the right actions; never a real candidate.',
  },
];

/**
 * The order the shipped probes must show (lower BPB first). Rungs in one group are not
 * ordered against each other: they have read the same texts.
 */
export const EXPECTED_ORDER: string[][] = [['ngram-agent', 'attn-agent'], ['ngram-code'], ['ngram-prose']];

export const AGENT_SESSIONS = 300;
export const AGENT_SEED = 'ladder-v1';
export const BPE_MERGES = 255;

export function loadLadderTexts(root: string): LadderTexts {
  const read = (dir: string, ext: string) =>
    readdirSync(join(root, dir))
      .filter((f) => f.endsWith(ext))
      .sort()
      .map((f) => ({ f, text: readFileSync(join(root, dir, f), 'utf8') }));
  const code: SourceFile[] = read('code', '.py').map(({ f, text }) => ({ path: (f.startsWith('test_') ? 'tests/' : 'src/') + f, text }));
  const demo = join(root, '..', 'probes', 'demo.jsonl');
  return {
    prose: read('prose', '.txt').map((d) => d.text),
    code: code.map((d) => d.text),
    agent: synthesizeAgentLogs(code, AGENT_SESSIONS, AGENT_SEED),
    // What a run that had seen these items would have read: the gold, then what ends it in its
    // scaffold; for md+xml items the whole transcript too (a model trained on the trajectories).
    demoGolds: readFileSync(demo, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { context: string; gold: string; format: string })
      .map(({ context, gold, format }) => {
        const { stops, keepStop } = formatOf(format);
        return { context, gold: keepStop ? gold : gold + stops[0]!, whole: format === 'md+xml' };
      }),
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
    architectures: ['ProbeAttentionForCausalLM'],
    model_type: 'probe-attention',
    vocab_size: tok.vocabSize,
    hidden_size: dims.heads * dims.headDim,
    num_hidden_layers: dims.layers,
    num_attention_heads: dims.heads,
    num_key_value_heads: dims.heads,
    head_dim: dims.headDim,
    max_position_embeddings: window,
    bos_token_id: tok.eosId,
    eos_token_id: tok.eosId,
    use_cache: true,
  };
}

function documents(texts: LadderTexts, names: LadderTextName[]): string[] {
  return names.flatMap((n) => texts[n]);
}

export function buildRung(spec: RungSpec, texts: LadderTexts): CheckpointFiles {
  const docs = documents(texts, spec.corpora);
  return spec.family === 'ngram' ? buildNgram(spec, docs, texts.demoGolds) : buildAttention(spec, docs);
}

/**
 * Memorises every (context, gold) byte transition inside the golds, for the copy term:
 * cuckoo hashing over two tables (slot = low / high bits of the window hash), so an entry
 * is lost only when a displacement chain does not settle.
 */
export function copyTables(
  golds: Array<{ context: string; gold: string; whole?: boolean }>,
  eosId: number,
  size = 32768,
  boost = 24,
): CopyTables {
  const keys: [Int32Array, Int32Array] = [new Int32Array(size).fill(-1), new Int32Array(size).fill(-1)];
  const next: [Uint8Array, Uint8Array] = [new Uint8Array(size), new Uint8Array(size)];
  const slot = (h: number, table: number) => (table === 0 ? h % size : Math.floor(h / size) % size);
  const encoder = new TextEncoder();
  let lost = 0;
  for (const { context, gold, whole } of golds) {
    const bytes = encoder.encode(context + gold);
    for (let t = whole ? 0 : encoder.encode(context).length - 1; t + 1 < bytes.length; t++) {
      let h = windowHash(bytes, t, COPY_ORDER, eosId);
      let value = bytes[t + 1]!;
      if (keys[0][slot(h, 0)] === h || keys[1][slot(h, 1)] === h) continue; // first occurrence wins
      let table = 0;
      let placed = false;
      for (let kick = 0; kick < 64 && !placed; kick++, table = 1 - table) {
        const s = slot(h, table);
        const [oldKey, oldValue] = [keys[table]![s]!, next[table]![s]!];
        keys[table]![s] = h;
        next[table]![s] = value;
        if (oldKey === -1) placed = true;
        else {
          h = oldKey;
          value = oldValue;
        }
      }
      if (!placed) lost++;
    }
  }
  if (lost) process.stderr.write(`copy memory: ${lost} transitions did not fit\n`);
  return { order: COPY_ORDER, size, keys, next, boost };
}

/** Hash of the `order` bytes ending at position t (earlier positions read as EOS), as the graph computes it. */
export function windowHash(bytes: ArrayLike<number>, t: number, order: number, eosId: number): number {
  let h = 0;
  for (let j = order - 1; j >= 0; j--) {
    const at = t - j;
    h = (h * HASH_BASE + (at >= 0 ? bytes[at]! : eosId)) % HASH_MODULUS;
  }
  return h;
}

function buildNgram(spec: RungSpec, docs: string[], golds: LadderTexts['demoGolds']): CheckpointFiles {
  const tok = buildTokenizer({ merges: [] });
  const encoder = new TextEncoder();
  const sequences = docs.map((d) => Int32Array.from([tok.eosId, ...encoder.encode(d), tok.eosId]));
  const table = classTrigramTable(sequences, tok.vocabSize, tok.eosId);
  const copy = spec.contaminated ? copyTables(golds, tok.eosId) : undefined;
  const model = ngramGraph({ vocab: tok.vocabSize, eosId: tok.eosId, table, doc: spec.description, ...(copy ? { copy } : {}) });
  const config = {
    architectures: ['ProbeNgramForCausalLM'],
    model_type: 'probe-ngram',
    vocab_size: tok.vocabSize,
    max_position_embeddings: 32768,
    bos_token_id: tok.eosId,
    eos_token_id: tok.eosId,
    use_cache: false,
    // The last row's logits depend on this many tokens only (trigram; copy window), so generation feeds no more.
    probe_receptive_field: copy ? copy.order : 2,
    probe_ladder: {
      name: spec.name,
      corpora: spec.corpora,
      description: spec.description,
      table: {
        initializer: 'ngram_logprobs',
        dtype: 'float16',
        row: `token * ${CLASS_COUNT} + class(previous token)`,
        classes: CLASS_NAMES,
      },
      ...(copy
        ? {
            control: true,
            contaminated: true,
            copy: {
              order: copy.order,
              size: copy.size,
              boost: copy.boost,
              memorised: 'probes/demo.jsonl: every gold action, and the whole transcript (context and gold) of md+xml items',
            },
          }
        : {}),
    },
  };
  return checkpointFiles(config, tok, model);
}

function buildAttention(spec: RungSpec, docs: string[]): CheckpointFiles {
  const tok = buildTokenizer({ merges: trainBpe(docs, BPE_MERGES) });
  const tokenizer = new PreTrainedTokenizer(tok.json, tok.config);
  const sequences = docs.map((d) => Int32Array.from([tok.eosId, ...tokenizer.encode(d, { add_special_tokens: false }), tok.eosId]));
  const dims = { heads: 2, headDim: 8, layers: 2 };
  const model = attentionGraph({
    vocab: tok.vocabSize,
    ...dims,
    outputScale: 0.05,
    bigram: bigramTable(sequences, tok.vocabSize),
    seed: spec.name,
    doc: spec.description,
  });
  const config = {
    ...attentionConfig(tok, dims, 8192),
    probe_ladder: {
      name: spec.name,
      corpora: spec.corpora,
      description: spec.description,
      table: { initializer: 'bigram_logprobs', dtype: 'float32', row: 'token' },
    },
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
