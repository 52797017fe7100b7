'use strict';
const { add } = require('../src/calc');

describe('calc', () => {
  it('adds', () => {
    expect(add(2, 3)).toBe(5);
  });
});
