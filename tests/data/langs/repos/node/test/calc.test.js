'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { add, divide } = require('../src/calc.js');

test('adds two numbers', () => {
  assert.strictEqual(add(2, 3), 5);
});

test('divides by zero', () => {
  assert.strictEqual(divide(1, 0), Infinity);
});

test('divides', () => {
  assert.strictEqual(divide(6, 3), 2);
});
