import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cartTotal, lineTotal } from '../src/cart.js';

test('line total uses quantity', () => {
  assert.equal(lineTotal({ price: 2.5, quantity: 4 }), 10);
});

test('cart total uses quantities', () => {
  assert.equal(cartTotal([{ price: 1, quantity: 3 }, { price: 2, quantity: 2 }]), 7);
});

test('missing quantity counts once', () => {
  assert.equal(lineTotal({ price: 3 }), 3);
});
