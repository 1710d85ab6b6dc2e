/** pass@K's token limit per checkpoint, in the checkpoint's own tokens (`probe demo --passk-gold-margin`). */
import { describe, expect, it } from 'vitest';
import { passkTokenLimit } from '../src/pipeline/rungs/passk.ts';

const items = [{ gold: 'ls -la' }, { gold: 'sed -i s/a/b/ f.py' }];
const bytes = { encode: (t: string) => [...Buffer.from(t)] };
const words = { encode: (t: string) => t.split(' ').map((_, i) => i) };

describe('pass@K token limit', () => {
  it('is the cap without a margin, else the margin times the longest gold in this tokenizer, never above the cap', () => {
    expect(passkTokenLimit({ passkMaxTokens: 640 }, items, bytes)).toBe(640);
    expect(passkTokenLimit({ passkMaxTokens: 640, passkGoldMargin: 1.25 }, items, bytes)).toBe(Math.ceil(1.25 * 18));
    expect(passkTokenLimit({ passkMaxTokens: 640, passkGoldMargin: 1.25 }, items, words)).toBe(Math.ceil(1.25 * 4));
    expect(passkTokenLimit({ passkMaxTokens: 10, passkGoldMargin: 1.25 }, items, bytes)).toBe(10);
  });
});
