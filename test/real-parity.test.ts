/**
 * Parity with Hugging Face transformers on real checkpoints: every item of
 * ../shared/models/reference-items.json scored by each of the three real Llama exports
 * agrees per item with the log-probs HF computed in fp32 (reference-logprobs.json, the
 * variant the tokenizer's BOS policy selects) within 1e-4 nats (or one fp32 ulp of a long
 * item's total: helpers/reference-tolerance.ts), with the same token and
 * byte counts — in process (from the ONNX exports, and from the same weights as Hugging Face
 * safetensors directories, whose graph probe builds), and through `probe serve` over HTTP.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpBackend } from '../src/backends/http/backend.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import type { CompletionBackend } from '../src/backends/types.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { close, serveCheckpoint } from './helpers/http.ts';
import { REFERENCE_NATS, referenceTolerance } from './helpers/reference-tolerance.ts';

const MODELS = join(REPO_ROOT, '..', 'shared', 'models');
const hasModels = existsSync(join(MODELS, 'reference-logprobs.json'));

interface ReferenceItem {
  bytes: number;
  tokens: number;
  nats_nobos: number;
  nats_bos: number;
  greedy_nobos: boolean;
}
interface Reference {
  models: Record<string, { heldout_code_bpb: number; items: Record<string, ReferenceItem> }>;
}

function load(): { items: Record<string, { context: string; gold: string }>; reference: Reference } {
  return {
    items: JSON.parse(readFileSync(join(MODELS, 'reference-items.json'), 'utf8')),
    reference: JSON.parse(readFileSync(join(MODELS, 'reference-logprobs.json'), 'utf8')),
  };
}

/** Per item: |Δ nats| against the reference, and token/byte counts, scored one item at a time as the probes do. */
async function compare(backend: CompletionBackend, model: string) {
  const { items, reference } = load();
  const expected = reference.models[model]!.items;
  const ids = Object.keys(expected);
  const results = await backend.score(ids.map((id) => ({ context: items[id]!.context, continuations: [items[id]!.gold] })));
  return ids.map((id, i) => {
    const got = results[i]![0]!;
    const nats = -got.tokenLogprobs.reduce((a, b) => a + b, 0);
    return {
      id,
      delta: Math.abs(nats - expected[id]!.nats_nobos),
      tolerance: referenceTolerance(expected[id]!.nats_nobos),
      tokens: [got.tokens.length, expected[id]!.tokens],
      bytes: [got.bytes, expected[id]!.bytes],
      greedy: [got.greedy, expected[id]!.greedy_nobos],
    };
  });
}

function assertParity(rows: Awaited<ReturnType<typeof compare>>): void {
  expect(rows.length).toBeGreaterThanOrEqual(25);
  for (const row of rows) {
    expect(row.delta, `${row.id}: |Δ nats|`).toBeLessThan(row.tolerance);
    expect(row.tokens[0], `${row.id}: tokens`).toBe(row.tokens[1]);
    expect(row.bytes[0], `${row.id}: bytes`).toBe(row.bytes[1]);
    expect(row.greedy[0], `${row.id}: greedy`).toBe(row.greedy[1]);
  }
}

describe.skipIf(!hasModels)('real checkpoints agree with Hugging Face transformers', () => {
  for (const model of ['llama-bpe8k-s40', 'llama-bpe8k-s250', 'llama-bpe8k-s1500']) {
    it(`${model}: every reference item within ${REFERENCE_NATS} nats (or an fp32 ulp of a long total), same tokens and bytes (in process)`, async () => {
      const backend = await OnnxBackend.open(join(MODELS, model));
      try {
        assertParity(await compare(backend, model));
      } finally {
        await backend.close();
      }
    }, 120_000);
  }

  // The same weights as a Hugging Face directory (safetensors): probe builds the graph itself (src/backends/hf/).
  for (const model of ['llama-bpe8k-s40', 'llama-bpe8k-s250', 'llama-bpe8k-s1500']) {
    it(`hf/${model}: every reference item within ${REFERENCE_NATS} nats (or an fp32 ulp of a long total), same tokens and bytes (the graph built from model.safetensors)`, async () => {
      const backend = await OnnxBackend.open(join(MODELS, 'hf', model));
      try {
        expect(backend.engine).toBe('probe in process (onnxruntime): Llama graph built from model.safetensors');
        assertParity(await compare(backend, model));
      } finally {
        await backend.close();
      }
    }, 120_000);
  }

  describe('through probe serve', () => {
    const model = 'llama-bpe8k-s1500';
    let served: Awaited<ReturnType<typeof serveCheckpoint>>;
    beforeAll(async () => {
      served = await serveCheckpoint(join(MODELS, model));
    }, 60_000);
    afterAll(async () => {
      await close(served.server);
      await served.backend.close();
    });

    it(`${model}: the same numbers over HTTP, tokenised by the server or by --tokenizer`, async () => {
      for (const tokenizerDir of [undefined, join(MODELS, model)]) {
        const http = await HttpBackend.open(served.url, tokenizerDir ? { tokenizerDir } : {});
        assertParity(await compare(http, model));
        await http.close();
      }
    }, 180_000);
  });
});
