import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addDays, isLeapYear } from '../src/dates.js';

test('leap day', () => {
  assert.equal(addDays('2024-02-28', 1), '2024-02-29');
});

test('month end', () => {
  assert.equal(addDays('2023-01-31', 1), '2023-02-01');
});

test('leap years', () => {
  assert.equal(isLeapYear(2000), true);
  assert.equal(isLeapYear(1900), false);
});
