import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatCents } from '../src/money.js';

test('pads single-digit cents', () => {
  assert.equal(formatCents(105), '$1.05');
});

test('negative small amounts', () => {
  assert.equal(formatCents(-7), '-$0.07');
});
