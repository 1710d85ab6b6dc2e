/** Patch MCQ against independent computations on a counted checkpoint. */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../src/backends/onnx/backend.ts';
import { scoreContinuation } from '../src/backends/single.ts';
import { REPO_ROOT } from '../src/embedded.ts';
import { LETTER_REGEX, letterPrompt, scoreMcq } from '../src/probes/mcq.ts';
import { MCQ_MIN_DISTRACTORS } from '../src/schema/probe-item.ts';
import { loadProbeItems } from '../src/probes/load.ts';
import { CKPT } from './helpers/paths.ts';

const items = loadProbeItems(join(REPO_ROOT, 'probes', 'demo.jsonl'))
  .filter((i) => i.distractors.length >= MCQ_MIN_DISTRACTORS)
  .slice(0, 6);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('probe mcq (likelihood)', () => {
  let backend: OnnxBackend;
  beforeAll(async () => {
    backend = await OnnxBackend.open(CKPT.attention);
  });
  afterAll(async () => {
    await backend.close();
  });

  it('picks by log-likelihood, per byte and by PMI, as computed option by option', async () => {
    const result = await scoreMcq('attn', backend, items, 'likelihood', 0);
    expect(result.items).toHaveLength(items.length);
    for (const [k, item] of items.entries()) {
      const options = [item.gold, ...item.distractors];
      const alone = await Promise.all(options.map((o) => scoreContinuation(backend, item.context, o)));
      const empty = await Promise.all(options.map((o) => scoreContinuation(backend, '', o)));
      const ll = alone.map((r) => sum(r.tokenLogprobs));
      const argmax = (v: number[]) => v.indexOf(Math.max(...v));
      const got = result.items[k]!;
      got.logliks!.forEach((v, i) => expect(v).toBeCloseTo(ll[i]!, 6));
      expect(got.pick).toEqual({
        acc: argmax(ll),
        acc_norm: argmax(alone.map((r, i) => ll[i]! / r.bytes)),
        acc_pmi: argmax(ll.map((v, i) => v - sum(empty[i]!.tokenLogprobs))),
      });
      expect(got.correct).toBe(argmax(ll) === 0);
    }
    const mean = (f: (i: (typeof result.items)[number]) => boolean | null) => result.items.filter((i) => f(i)).length / result.items.length;
    expect(result.acc).toBe(mean((i) => i.correct));
    expect(result.acc_norm).toBe(mean((i) => i.correct_norm));
    expect(result.acc_pmi).toBe(mean((i) => i.correct_pmi));
  });

  it('leaves out items with fewer than 3 distractors and says which', async () => {
    const bare = { ...items[0]!, id: 'bare', distractors: [] };
    const two = { ...items[0]!, id: 'two', distractors: items[0]!.distractors.slice(0, 2) };
    const result = await scoreMcq('attn', backend, [bare, two, items[1]!], 'likelihood', 0);
    expect(result.min_distractors).toBe(3);
    expect(result.skipped).toEqual(['bare', 'two']);
    expect(result.items.map((i) => i.id)).toEqual([items[1]!.id]);
  });

  it('reports how often the shortest option wins under each rule, and options found verbatim in the context', async () => {
    // The last item's first distractor copied into its context: a verbatim distractor there.
    const copied = { ...items[5]!, id: 'copied', context: `${items[5]!.context}${items[5]!.distractors[0]}\n` };
    const asked = [...items.slice(0, 5), copied];
    const result = await scoreMcq('attn', backend, asked, 'likelihood', 0);
    const bytes = (o: string) => Buffer.byteLength(o, 'utf8');
    const strictlyShortest = (k: number) => {
      const options = [asked[k]!.gold, ...asked[k]!.distractors].map(bytes);
      const least = Math.min(...options);
      return options.filter((l) => l === least).length === 1 ? options.indexOf(least) : -1;
    };
    const shortestWins = (rule: 'acc' | 'acc_norm' | 'acc_pmi') =>
      result.items.filter((scored, k) => {
        const pick = (scored.pick as Record<string, number>)[rule]!;
        return strictlyShortest(k) >= 0 && pick === strictlyShortest(k);
      }).length / asked.length;
    expect(result.diagnostics.shortest_wins).toEqual({
      acc: shortestWins('acc'),
      acc_norm: shortestWins('acc_norm'),
      acc_pmi: shortestWins('acc_pmi'),
      letter: null,
    });
    expect(result.diagnostics.shortest_is_gold).toBe(asked.filter((_, k) => strictlyShortest(k) === 0).length / asked.length);
    const inContext = (k: number, o: string) => asked[k]!.context.includes(o);
    const goldShare = asked.filter((it, k) => inContext(k, it.gold)).length / asked.length;
    const distractorShare = asked.filter((it, k) => it.distractors.some((o) => inContext(k, o))).length / asked.length;
    expect(distractorShare).toBeGreaterThanOrEqual(1 / asked.length);
    expect(result.diagnostics.verbatim_in_context).toEqual({
      any: asked.filter((it, k) => [it.gold, ...it.distractors].some((o) => inContext(k, o))).length / asked.length,
      gold: goldShare,
      distractor: distractorShare,
    });
  });
});

describe('probe mcq (letter)', () => {
  it("lists the options A, B, … and reads the answer with APTBench's regex", () => {
    const prompt = letterPrompt('ctx\n', ['x = 1', 'x = 2']);
    expect(prompt).toBe('ctx\n\nQuestion: which of these is the next action?\n\n(A) x = 1\n\n(B) x = 2\n\nAnswer:');
    expect(LETTER_REGEX.exec(' (B) because')?.[1]).toBe('B');
    expect(LETTER_REGEX.exec(' c\n')?.[1]).toBe('c');
    expect(LETTER_REGEX.exec(' none')).toBeNull();
  });

  it('shuffles by seed, reproducibly, and maps the letter back to the option', async () => {
    const backend = await OnnxBackend.open(CKPT.agent);
    const a = await scoreMcq('agent', backend, items, 'letter', 3);
    const b = await scoreMcq('agent', backend, items, 'letter', 3);
    expect(a).toEqual(b);
    for (const item of a.items) {
      const letter = LETTER_REGEX.exec(item.generated!)?.[1];
      if (!letter) expect(item.pick).toEqual({ letter: null });
      expect(item.correct).toBe((item.pick as { letter: number | null }).letter === 0);
    }
    await backend.close();
  });
});
