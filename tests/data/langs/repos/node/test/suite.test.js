'use strict';
const { describe, it } = require('node:test');
const assert = require('node:assert');
const { divide } = require('../src/calc.js');

describe('divide', () => {
  it('halves', () => {
    assert.deepStrictEqual({ q: divide(1, 2) }, { q: 0.25 });
  });
});
