import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cartTotal } from '../src/cart.js';

test('empty cart', () => {
  assert.equal(cartTotal([]), 0);
});

test('single item', () => {
  assert.equal(cartTotal([{ price: 2, quantity: 1 }]), 2);
});
