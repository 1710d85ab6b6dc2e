import assert from 'node:assert/strict';
import { test } from 'node:test';
import { titleCase } from '../src/titleCase.js';

test('capitalises words', () => {
  assert.equal(titleCase('red tea pot'), 'Red Tea Pot');
});

test('keeps small words lower-case', () => {
  assert.equal(titleCase('the lord of the rings'), 'The Lord of the Rings');
});
