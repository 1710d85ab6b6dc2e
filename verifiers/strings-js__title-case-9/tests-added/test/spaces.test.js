import assert from 'node:assert/strict';
import { test } from 'node:test';
import { titleCase } from '../src/titleCase.js';

test('double spaces survive', () => {
  assert.equal(titleCase('the  lord of the rings'), 'The  Lord of the Rings');
});

test('empty string', () => {
  assert.equal(titleCase(''), '');
});
