const { add, divide } = require('../calc');

describe('calc', () => {
  test('adds', () => {
    expect(add(2, 3)).toBe(5);
  });

  test('divides by zero', () => {
    expect(divide(1, 0)).toBe(Infinity);
  });
});
