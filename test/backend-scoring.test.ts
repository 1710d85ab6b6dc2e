/**
 * Scoring on the attention checkpoint (a real decoder graph with a KV cache): the
 * boundary rule, cache reuse, chunking and window truncation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeTail, splitContinuations, splitPair } from '../src/backends/boundary.ts';
import { logSoftmaxAt } from '../src/backends/logits.ts';
import { scoreContinuation } from '../src/backends/single.ts';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { readCheckpointDir } from '../src/backends/checkpoint-dir.ts';
import { OnnxGraph } from '../src/backends/onnx/graph.ts';
import { CheckpointTokenizer } from '../src/backends/onnx/tokenizer.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { CKPT, DEMO_PROBES } from './helpers/paths.ts';

const items = loadProbeItems(DEMO_PROBES);
const context = items[0]!.context;
const options = [items[0]!.gold, items[1]!.gold, items[3]!.gold, '<submit/>'];

/** Log-probs with no cache reuse at all: one forward pass over context + continuation. */
async function uncached(graph: OnnxGraph, ctx: number[], cont: number[]): Promise<number[]> {
  const { logits } = await graph.forward([...ctx, ...cont.slice(0, -1)], graph.emptyCache());
  return cont.map((t, i) => logSoftmaxAt(logits, (ctx.length - 1 + i) * graph.vocab, graph.vocab, t).logprob);
}

describe('the context/continuation boundary (lm-evaluation-harness rule)', () => {
  const files = readCheckpointDir(CKPT.attention);
  const tokenizer = new CheckpointTokenizer(files);
  const encode = (t: string) => tokenizer.encode(t);

  it('moves trailing context whitespace into the continuation', () => {
    const pair = splitPair('Answer:  \n', 'yes', encode);
    expect(pair.context).toBe('Answer:');
    expect(pair.continuation).toBe('  \nyes');
    expect(pair.contextTokens).toEqual(encode('Answer:'));
    expect(pair.continuationTokens).toEqual(encode('Answer:  \nyes').slice(pair.contextTokens.length));
  });

  it('splits at the context token count when a merge crosses the boundary', () => {
    // "sel" + "f" is one BPE token ("Ġself") in this tokenizer: the merge spans the boundary.
    const pair = splitPair('return sel', 'f.value', encode);
    const whole = encode('return self.value');
    expect(whole.slice(0, pair.contextTokens.length)).not.toEqual(pair.contextTokens);
    expect(pair.continuationTokens).toEqual(whole.slice(pair.contextTokens.length));
    expect(tokenizer.decode(pair.continuationTokens)).not.toBe('f.value');
  });

  it('never scores zero tokens when a merge swallows the whole continuation', async () => {
    // "return sel" + "f" encodes as "return" "Ġself": the harness's split would leave nothing.
    const pair = splitPair('return sel', 'f', encode);
    expect(pair.continuationTokens).toEqual(encode('return self').slice(1));
    expect(pair.contextTokens).toEqual(encode('return'));
    const backend = await OnnxBackend.open(CKPT.attention);
    const swallowed = await scoreContinuation(backend, 'return sel', 'f');
    const plain = await scoreContinuation(backend, 'return', ' self');
    expect(swallowed.tokenLogprobs).toEqual(plain.tokenLogprobs);
    expect(swallowed.bytes).toBe(1);
    // Mixed with options that keep the shared context, each is scored as it is alone.
    const [together] = await backend.score([{ context: 'return sel', continuations: ['f', 'f.value', 'ect'] }]);
    for (const [i, option] of ['f', 'f.value', 'ect'].entries()) {
      expect(together![i]).toEqual(await scoreContinuation(backend, 'return sel', option));
    }
    await backend.close();
  });

  it('the backend scores exactly the split tokens', async () => {
    const backend = await OnnxBackend.open(CKPT.attention);
    const r = await scoreContinuation(backend, 'return sel', 'f.value');
    expect(r!.tokens).toEqual(splitPair('return sel', 'f.value', encode).continuationTokens);
    expect(r!.bytes).toBe(Buffer.byteLength('f.value'));
    await backend.close();
  });
});

describe('attention checkpoint scoring', () => {
  let graph: OnnxGraph;
  let tokenizer: CheckpointTokenizer;
  beforeAll(async () => {
    const files = readCheckpointDir(CKPT.attention);
    tokenizer = new CheckpointTokenizer(files);
    graph = await OnnxGraph.load(files);
  });
  afterAll(async () => {
    await graph.close();
  });

  it('is a real decoder graph named as Optimum exports it', () => {
    expect(graph.hasCache).toBe(true);
  });

  it('cached, uncached and chunked log-probs agree within 1e-4', async () => {
    const ctxTokens = tokenizer.encode(context.replace(/\s+$/u, ''));
    expect(ctxTokens.length).toBeGreaterThan(150);
    const reference = await Promise.all(
      options.map((o) => uncached(graph, ctxTokens, splitPair(context, o, (t) => tokenizer.encode(t)).continuationTokens)),
    );
    for (const chunkSize of [1, 7, 64, 4096]) {
      const backend = await OnnxBackend.open(CKPT.attention, { chunkSize });
      const [results] = await backend.score([{ context, continuations: options }]);
      results!.forEach((r, i) => {
        expect(r.tokenLogprobs).toHaveLength(reference[i]!.length);
        r.tokenLogprobs.forEach((lp, t) => expect(Math.abs(lp - reference[i]![t]!)).toBeLessThan(1e-4));
      });
      await backend.close();
    }
  });

  it('the attention term matters: the same token scores differently after a different history', async () => {
    const backend = await OnnxBackend.open(CKPT.attention);
    const a = await scoreContinuation(backend, 'cat cart/pricing.py\nreturn', ' total');
    const b = await scoreContinuation(backend, 'GNU General Public License\nreturn', ' total');
    expect(a!.tokens).toEqual(b!.tokens);
    expect(Math.abs(a!.tokenLogprobs[0]! - b!.tokenLogprobs[0]!)).toBeGreaterThan(1e-4);
    await backend.close();
  });

  it('options sharing a context score as they do one by one', async () => {
    const backend = await OnnxBackend.open(CKPT.attention, { chunkSize: 32 });
    const [together] = await backend.score([{ context, continuations: options }]);
    const alone = await backend.score(options.map((o) => ({ context, continuations: [o] })));
    together!.forEach((r, i) => expect(r.tokenLogprobs).toEqual(alone[i]![0]!.tokenLogprobs));
    await backend.close();
  });

  it('left-truncates contexts longer than the window and flags them', async () => {
    const gold = items[0]!.gold;
    const pair = splitPair(context, gold, (t) => tokenizer.encode(t));
    const window = pair.continuationTokens.length + 50;
    const backend = await OnnxBackend.open(CKPT.attention, { window, chunkSize: 16 });
    const r = await scoreContinuation(backend, context, gold);
    expect(r!.truncated).toBe(true);
    const kept = pair.contextTokens.slice(-(window - (pair.continuationTokens.length - 1)));
    const expected = await uncached(graph, kept, pair.continuationTokens);
    r!.tokenLogprobs.forEach((lp, t) => expect(Math.abs(lp - expected[t]!)).toBeLessThan(1e-4));
    const short = await scoreContinuation(backend, 'ls', ' -la');
    expect(short!.truncated).toBe(false);
    await backend.close();
  });

  it('scores a context far longer than the window from a bounded tail, exactly as from the whole encoding', async () => {
    const gold = items[0]!.gold;
    const long = longContext(300_000);
    const whole = splitPair(long, gold, (t) => tokenizer.encode(t));
    const window = 256;
    const backend = await OnnxBackend.open(CKPT.attention, { window, chunkSize: 64 });
    const r = await scoreContinuation(backend, long, gold);
    expect(r!.truncated).toBe(true);
    expect(r!.tokens).toEqual(whole.continuationTokens);
    const kept = whole.contextTokens.slice(-(window - (whole.continuationTokens.length - 1)));
    const expected = await uncached(graph, kept, whole.continuationTokens);
    r!.tokenLogprobs.forEach((lp, t) => expect(Math.abs(lp - expected[t]!)).toBeLessThan(1e-4));
    await backend.close();
  });

  it('ngram checkpoints (no cache) agree with and without truncation when the window keeps their order', async () => {
    const full = await OnnxBackend.open(CKPT.code);
    const cut = await OnnxBackend.open(CKPT.code, { window: 400 });
    const a = await scoreContinuation(full, context, items[0]!.gold);
    const b = await scoreContinuation(cut, context, items[0]!.gold);
    expect(a!.truncated).toBe(false);
    expect(b!.truncated).toBe(true);
    expect(b!.tokenLogprobs).toEqual(a!.tokenLogprobs); // a class-trigram only sees two tokens back
    await Promise.all([full.close(), cut.close()]);
  });
});

/** About `chars` characters of agent transcripts, with the awkward parts of real contexts: indented code, long whitespace runs, a long word, non-ASCII. */
function longContext(chars: number): string {
  const block = [...items.map((i) => i.context), `${' '.repeat(3000)}x`, 'y'.repeat(5000), 'こんにちは 👋 '.repeat(200)].join('\n');
  return block.repeat(Math.ceil(chars / block.length)).slice(0, chars);
}

describe('bounded tokenisation of contexts far longer than the window', () => {
  const tokenizers = [CKPT.attention, CKPT.agent].map((dir) => new CheckpointTokenizer(readCheckpointDir(dir)));
  const golds = [items[0]!.gold, items[1]!.gold, '<submit/>'];

  it("keeps more than the window of context tokens, equal to the whole encoding's last ones, and encodes a small part of the text", () => {
    for (const tokenizer of tokenizers) {
      let encoded = 0;
      const encode = (t: string) => {
        encoded += t.length;
        return tokenizer.encode(t);
      };
      for (const cut of [0, 17]) {
        const context = longContext(400_000 - cut);
        const whole = splitContinuations(context, golds, (t) => tokenizer.encode(t));
        encoded = 0;
        const tail = splitContinuations(context, golds, encode, { keepTokens: 1024 });
        expect(encoded).toBeLessThan(context.length / 4);
        tail.forEach((pair, i) => {
          expect(pair.contextTokens.length).toBeGreaterThan(1024);
          expect(pair.contextTokens).toEqual(whole[i]!.contextTokens.slice(-pair.contextTokens.length));
          expect(pair.continuationTokens).toEqual(whole[i]!.continuationTokens);
          expect(pair.continuation).toBe(whole[i]!.continuation);
        });
        expect(encodeTail(context, 1024, (t) => tokenizer.encode(t))).toEqual(tail[0]!.contextTokens);
      }
    }
  });

  it("drops the tail's first tokens where the cut falls inside a long whitespace run, word or non-ASCII run", () => {
    for (const tokenizer of tokenizers) {
      const encode = (t: string) => tokenizer.encode(t);
      for (const run of [' ', 'y', 'こ']) {
        for (const extra of [0, 1, 2, 3]) {
          // The first cut lands about 12k characters before the end: inside the run, whose tokens depend on where it starts.
          const context = `${longContext(2_000)}\n${run.repeat(10_000 + extra)}x\n${longContext(6_000)}`;
          const whole = encode(context.replace(/\s+$/u, ''));
          const [pair] = splitContinuations(context, [items[0]!.gold], encode, { keepTokens: 1024 });
          expect(pair!.contextTokens.length).toBeGreaterThan(1024);
          expect(pair!.contextTokens.length).toBeLessThan(whole.length);
          expect(pair!.contextTokens).toEqual(whole.slice(-pair!.contextTokens.length));
        }
      }
    }
  });

  it('encodes a context that fits the window whole: the same pairs as without the bound', () => {
    for (const tokenizer of tokenizers) {
      const encode = (t: string) => tokenizer.encode(t);
      for (const context of [...items.map((i) => i.context), longContext(60_000)]) {
        const fits = encode(context).length + 10;
        expect(splitContinuations(context, golds, encode, { keepTokens: fits })).toEqual(splitContinuations(context, golds, encode));
      }
    }
  });
});

describe('splitContinuations (context tokenised once for many options)', () => {
  const tokenizers = [CKPT.attention, CKPT.agent].map((dir) => new CheckpointTokenizer(readCheckpointDir(dir)));
  const golds = items.map((i) => i.gold);
  const extra = ['f.value', ' self', '\n\n## Thinking', '', '  indented', 'こんにちは 👋', 'x'.repeat(300)];

  it('gives exactly the tokens of encoding each context + continuation in full', () => {
    for (const tokenizer of tokenizers) {
      const encode = (t: string) => tokenizer.encode(t);
      for (const item of items) {
        for (const context of [item.context, item.context.replace(/\s+$/u, ''), `${item.context}  `, item.context.slice(0, -7)]) {
          const options = [...golds, ...extra];
          const fast = splitContinuations(context, options, encode);
          options.forEach((option, i) => expect(fast[i]).toEqual(splitPair(context, option, encode)));
        }
      }
    }
  });
});
