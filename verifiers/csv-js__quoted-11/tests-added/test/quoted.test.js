import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseLine } from '../src/csv.js';

test('comma inside quotes', () => {
  assert.deepEqual(parseLine('a,"b,c",d'), ['a', 'b,c', 'd']);
});

test('escaped quotes', () => {
  assert.deepEqual(parseLine('"say ""hi""",x'), ['say "hi"', 'x']);
});

test('empty fields', () => {
  assert.deepEqual(parseLine('a,,b'), ['a', '', 'b']);
});
