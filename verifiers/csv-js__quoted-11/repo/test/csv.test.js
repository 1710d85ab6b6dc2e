import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseCsv, parseLine } from '../src/csv.js';

test('plain fields', () => {
  assert.deepEqual(parseLine('a,b'), ['a', 'b']);
});

test('several lines', () => {
  assert.deepEqual(parseCsv('a,b\nc,d\n'), [['a', 'b'], ['c', 'd']]);
});
