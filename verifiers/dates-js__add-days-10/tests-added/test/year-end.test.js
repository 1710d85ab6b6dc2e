import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addDays } from '../src/dates.js';

test('rolls into the next year', () => {
  assert.equal(addDays('2024-12-30', 5), '2025-01-04');
});

test('new year', () => {
  assert.equal(addDays('2023-12-31', 1), '2024-01-01');
});
