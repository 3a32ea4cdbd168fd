'use strict';
const assert = require('assert');
const { add, divide } = require('../src/calc.js');

describe('calc', function () {
  describe('add', function () {
    it('adds two numbers', function () {
      assert.strictEqual(add(2, 3), 5);
    });
  });

  it('divides by zero', function () {
    assert.strictEqual(divide(1, 0), Infinity);
  });

  it('divides', function () {
    assert.strictEqual(divide(6, 3), 2);
  });

  describe('hooks', function () {
    beforeEach(function () {
      divide(1, 0);
    });
    it('never runs', function () {});
  });
});
