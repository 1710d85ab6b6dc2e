import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatCents, sumCents } from '../src/money.js';

test('two-digit cents', () => {
  assert.equal(formatCents(1234), '$12.34');
});

test('sum', () => {
  assert.equal(sumCents([1, 2, 3]), 6);
});
