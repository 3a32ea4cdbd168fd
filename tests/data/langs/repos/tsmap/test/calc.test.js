'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { divide } = require('../dist/calc.js');

test('divides by zero', () => {
  assert.strictEqual(divide({ a: 1, b: 0 }), Infinity);
});
